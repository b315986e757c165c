#include <gtest/gtest.h>
#include <unistd.h>

#include <limits>

#include "test_util.hpp"
#include "tunable/context.hpp"
#include "tunable/options.hpp"

namespace tunable {
namespace {

using test::ScopedEnv;

TEST(Options, DefaultsWithoutEnvironment) {
  Options o = Options::from_environment();
  EXPECT_FALSE(o.enabled);
  EXPECT_TRUE(o.tuning);
  EXPECT_TRUE(o.numerical_check);
  EXPECT_EQ(o.filename, "tunable_results.csv");
  EXPECT_DOUBLE_EQ(o.max_tuning_duration_ms, 30.0);
  EXPECT_EQ(o.max_tuning_iterations, 100);
  EXPECT_EQ(o.rotating_buffer_size_mib, -1);
  EXPECT_TRUE(o.graph_tiebreak);
}

TEST(Options, ReadsEveryVariable) {
  ScopedEnv e1("TUNABLE_ENABLED", "1"), e2("TUNABLE_TUNING", "0"),
      e3("TUNABLE_FILENAME", "x.csv"), e4("TUNABLE_VERBOSE", "3"),
      e5("TUNABLE_VERBOSE_FILENAME", "out"), e6("TUNABLE_NUMERICAL_CHECK", "0"),
      e7("TUNABLE_MAX_TUNING_DURATION_MS", "12.5"), e8("TUNABLE_MAX_TUNING_ITERATIONS", "7"),
      e9("TUNABLE_MAX_WARMUP_DURATION_MS", "2"), e10("TUNABLE_MAX_WARMUP_ITERATIONS", "3"),
      e11("TUNABLE_ROTATING_BUFFER_SIZE", "64"), e12("TUNABLE_RECORD_UNTUNED", "1"),
      e13("TUNABLE_UNTUNED_FILENAME", "u.csv"), e14("TUNABLE_GRAPH_TIEBREAK", "0");
  Options o = Options::from_environment();
  EXPECT_TRUE(o.enabled);
  EXPECT_FALSE(o.tuning);
  EXPECT_EQ(o.filename, "x.csv");
  EXPECT_EQ(o.verbose, 3);
  EXPECT_EQ(o.verbose_filename, "out");
  EXPECT_FALSE(o.numerical_check);
  EXPECT_DOUBLE_EQ(o.max_tuning_duration_ms, 12.5);
  EXPECT_EQ(o.max_tuning_iterations, 7);
  EXPECT_DOUBLE_EQ(o.max_warmup_duration_ms, 2);
  EXPECT_EQ(o.max_warmup_iterations, 3);
  EXPECT_EQ(o.rotating_buffer_size_mib, 64);
  EXPECT_TRUE(o.record_untuned);
  EXPECT_EQ(o.untuned_filename, "u.csv");
  EXPECT_FALSE(o.graph_tiebreak);
}

TEST(Options, NumericalCheckTolerancePair) {
  ScopedEnv e("TUNABLE_NUMERICAL_CHECK", "1e-3_2e-2");
  Options o = Options::from_environment();
  EXPECT_TRUE(o.numerical_check);
  EXPECT_DOUBLE_EQ(o.atol, 1e-3);
  EXPECT_DOUBLE_EQ(o.rtol, 2e-2);
}

struct BadEnvCase {
  const char* var;
  const char* value;
};

class BadEnv : public ::testing::TestWithParam<BadEnvCase> {};

TEST_P(BadEnv, ErrorNamesVariableAndValue) {
  const auto& c = GetParam();
  ScopedEnv e(c.var, c.value);
  try {
    (void)Options::from_environment();
    FAIL() << "no error for " << c.var << "=" << c.value;
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), StatusCode::kParseError);
    const std::string msg = err.what();
    EXPECT_NE(msg.find(c.var), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("'") + c.value + "'"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Options, BadEnv,
    ::testing::Values(BadEnvCase{"TUNABLE_ENABLED", "maybe"}, BadEnvCase{"TUNABLE_TUNING", "2"},
                      BadEnvCase{"TUNABLE_GRAPH_TIEBREAK", "yes please"},
                      BadEnvCase{"TUNABLE_VERBOSE", "4"}, BadEnvCase{"TUNABLE_VERBOSE", "-1"},
                      BadEnvCase{"TUNABLE_VERBOSE", "1x"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_DURATION_MS", "fast"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_DURATION_MS", "-5"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_ITERATIONS", "1e3"},
                      BadEnvCase{"TUNABLE_MAX_WARMUP_ITERATIONS", ""},
                      BadEnvCase{"TUNABLE_ROTATING_BUFFER_SIZE", "-2"},
                      BadEnvCase{"TUNABLE_NUMERICAL_CHECK", "1e-3_x"},
                      BadEnvCase{"TUNABLE_NUMERICAL_CHECK", "_"},
                      BadEnvCase{"TUNABLE_RECORD_UNTUNED", "yes please"},
                      // What strtoll / strtod would take but a person did not mean.
                      BadEnvCase{"TUNABLE_VERBOSE", " 1"}, BadEnvCase{"TUNABLE_VERBOSE", "+1"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_DURATION_MS", "0x10"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_DURATION_MS", " 5"},
                      BadEnvCase{"TUNABLE_MAX_TUNING_DURATION_MS", "inf"},
                      BadEnvCase{"TUNABLE_MAX_WARMUP_ITERATIONS", "99999999999999999999"},
                      BadEnvCase{"TUNABLE_NUMERICAL_CHECK", "1e-400_1"},
                      BadEnvCase{"TUNABLE_NUMERICAL_CHECK", "0x1_1"},
                      BadEnvCase{"TUNABLE_NUMERICAL_CHECK", "-1_1"}));

TEST(Options, ApiOverridesEnvironment) {
  ScopedEnv e("TUNABLE_MAX_TUNING_ITERATIONS", "7");
  Context ctx(Device::cpu());  // reads the environment once, here
  EXPECT_EQ(ctx.options().max_tuning_iterations, 7);
  Options o = ctx.options();
  o.max_tuning_iterations = 3;
  ASSERT_TRUE(ctx.set_options(o).is_ok());
  EXPECT_EQ(ctx.options().max_tuning_iterations, 3);  // API wins afterwards
}

TEST(Options, ValidateNamesField) {
  Options o;
  o.verbose = 9;
  Status s = o.validate();
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("verbose"), std::string::npos);
  Context ctx(Device::cpu(), Options{});
  EXPECT_EQ(ctx.set_options(o).code(), StatusCode::kInvalidArgument);
}

TEST(Options, ValidateRefusesInfiniteDurationsAndTolerances) {
  Options o;
  o.max_tuning_duration_ms = std::numeric_limits<double>::infinity();
  EXPECT_NE(o.validate().message().find("max_tuning_duration_ms"), std::string::npos) << o.validate().message();
  o = Options{};
  o.max_warmup_duration_ms = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(o.validate().message().find("max_warmup_duration_ms"), std::string::npos);
  o = Options{};
  o.atol = std::numeric_limits<double>::infinity();  // would pass every candidate's check
  EXPECT_NE(o.validate().message().find("atol"), std::string::npos);
  o = Options{};
  o.atol = o.rtol = 0;  // an exact check is a legitimate (strict) choice
  EXPECT_TRUE(o.validate().is_ok());
}

TEST(Options, UnopenableVerboseFileIsAnErrorOfSetOptions) {
  test::TempDir dir;
  Options o;
  o.filename = "";
  Context ctx(Device::cpu(), o);
  o.verbose = 1;
  o.verbose_filename = dir.file("no/such/dir/log.txt");
  const Status st = ctx.set_options(o);
  EXPECT_EQ(st.code(), StatusCode::kIoError) << st.to_string();
  EXPECT_NE(st.message().find("no/such/dir/log"), std::string::npos) << st.message();
  // At verbose 0 nothing is written there, so nothing is created or refused.
  o.verbose = 0;
  o.verbose_filename = dir.file("quiet.txt");
  EXPECT_TRUE(ctx.set_options(o).is_ok());
  EXPECT_NE(::access(dir.file("quiet_cpu.txt").c_str(), F_OK), 0);
  // A context built with that option still works (logging on stderr), it does not throw.
  o.verbose = 1;
  o.verbose_filename = dir.file("no/such/dir/log.txt");
  EXPECT_NO_THROW(Context(Device::cpu(), o));
}

TEST(Options, InvalidEnvironmentMakesContextThrow) {
  ScopedEnv e("TUNABLE_VERBOSE", "loud");
  EXPECT_THROW(Context(Device::cpu()), Error);
}

}  // namespace
}  // namespace tunable
