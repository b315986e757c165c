// The test helpers themselves: a scratch directory that cannot be made fails loudly, and removal
// touches only what the helper created (it once fell back to "/tmp" and ran rm -rf on it).
#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "test_util.hpp"

namespace tunable::test {
namespace {

namespace fs = std::filesystem;

TEST(TempDir, RemovesExactlyWhatItCreated) {
  TempDir parent;
  const fs::path sibling = fs::path(parent.path()) / "sibling";
  ASSERT_TRUE(fs::create_directory(sibling));
  write_text((sibling / "keep.txt").string(), "keep");
  std::string inner_path;
  {
    ScopedEnv tmp("TMPDIR", parent.path().c_str());
    TempDir inner;
    inner_path = inner.path();
    EXPECT_EQ(fs::path(inner_path).parent_path(), fs::path(parent.path()));
    ASSERT_TRUE(fs::is_directory(inner_path));
    ASSERT_TRUE(fs::create_directory(fs::path(inner_path) / "nested"));
    write_text(inner.file("a.csv"), "x");
    write_text(inner.file("nested/b.csv"), "y");
  }
  EXPECT_FALSE(fs::exists(inner_path)) << inner_path << " was left behind";
  EXPECT_TRUE(fs::is_directory(parent.path()));
  EXPECT_EQ(slurp((sibling / "keep.txt").string()), "keep");
}

TEST(TempDir, TwoAreDistinct) {
  TempDir a, b;
  EXPECT_NE(a.path(), b.path());
  EXPECT_TRUE(fs::is_directory(a.path()));
  EXPECT_TRUE(fs::is_directory(b.path()));
}

// A scratch directory that cannot be made is an exception (the test that wanted it fails with the
// reason), and nothing is removed: not the place it was asked for, not its parent.
TEST(TempDir, FailureThrowsAndRemovesNothing) {
  TempDir parent;
  const std::string file = parent.file("not_a_directory");
  write_text(file, "precious");
  const std::string missing = parent.file("missing/deeper");
  for (const std::string& where : {file, missing}) {
    SCOPED_TRACE("TMPDIR=" + where);
    ScopedEnv tmp("TMPDIR", where.c_str());
    try {
      TempDir t;
      ADD_FAILURE() << "TempDir made " << t.path() << " under an unusable TMPDIR";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("TempDir"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(slurp(file), "precious");
  EXPECT_TRUE(fs::is_directory(parent.path()));
  EXPECT_TRUE(fs::exists(fs::temp_directory_path()));
  // Exactly the one file written above: the failed attempts created (and removed) nothing here.
  EXPECT_EQ(std::distance(fs::directory_iterator(parent.path()), fs::directory_iterator{}), 1);
}

}  // namespace
}  // namespace tunable::test
