"""The Python package's layer over libtunable, on any machine (no GPU, no PyTorch needed).

Run from the repository root with the build's library:
    TUNABLE_TEST_BUILD=build python3 -m unittest discover -s python/tests
"""
import ctypes
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.abspath(os.environ.get("TUNABLE_TEST_BUILD", os.path.join(ROOT, "build")))
LIB = os.path.join(BUILD, "libtunable.so")
PRELOAD = os.path.join(BUILD, "libtunable_preload.so")
sys.path.insert(0, os.path.join(ROOT, "python"))


def run_python(code, env_extra, preload=False):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), CUDA_VISIBLE_DEVICES="")
    env.pop("TUNABLE_ENABLED", None)
    env.update(env_extra)
    if preload:
        env["LD_PRELOAD"] = PRELOAD
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


class LibraryLoading(unittest.TestCase):
    def test_a_missing_library_is_named(self):
        r = run_python("import tunable._lib as L\ntry:\n L.lib()\nexcept L.TunableError as e:\n print('ERR', e)",
                       {"TUNABLE_LIBRARY": "/nonexistent/libtunable.so"})
        self.assertIn("ERR libtunable.so not found at /nonexistent/libtunable.so", r.stdout, r.stderr)

    def test_the_package_library_is_the_default(self):
        r = run_python("import tunable._lib as L; print(L.library_path())", {"TUNABLE_LIBRARY": ""})
        self.assertTrue(r.stdout.strip().endswith(os.path.join("tunable", "lib", "libtunable.so")), r.stdout + r.stderr)

    def test_bad_codes_and_no_device_are_errors_not_crashes(self):
        code = "\n".join([
            "import tunable._lib as L",
            "lib = L.lib()",
            "rc = lib.tunable_c_rms_norm(0, None, None, None, 1, 8, 8, 8, 1e-6, 9, 0, None, 0, None, None)",
            "print('dtype', rc, L.last_error())",
            "rc = lib.tunable_c_act_and_mul(0, None, None, 1, 8, 16, 8, 2, 7, None, None)",
            "print('act', rc, L.last_error())",
            "rc = lib.tunable_c_rms_norm(0, 1, 1, 1, 1, 8, 8, 8, 1e-6, 2, 0, None, 0, None, None)",
            "print('nogpu', rc, L.last_error())",
        ])
        r = run_python(code, {"TUNABLE_LIBRARY": LIB})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("dtype 2 dtype code 9 (0 fp32, 1 fp16, 2 bf16)", r.stdout)
        self.assertIn("act 1 activation code 7 (0 SiLU, 1 GELU-tanh)", r.stdout)
        line = [l for l in r.stdout.splitlines() if l.startswith("nogpu")][0]
        self.assertNotEqual(line.split()[1], "0", line)  # no device here: a status, never a crash


class GemmModes(unittest.TestCase):
    def test_without_the_preload_enable_says_how_to_start(self):
        r = run_python("import tunable\ntry:\n tunable.enable('use')\nexcept tunable.TunableError as e:\n print('ERR', e)\n"
                       "print(tunable.current_gemm_mode())", {"TUNABLE_LIBRARY": LIB})
        self.assertIn("ERR the cuBLAS preload is not active", r.stdout, r.stderr)
        self.assertIn("tunable run -- python", r.stdout)
        self.assertIn("('off', '')", r.stdout)

    def test_modes_switch_and_the_block_restores_them(self):
        code = "\n".join([
            "import tunable",
            "print('start', tunable.current_gemm_mode())",
            "tunable.enable('record', results_file='/tmp/r.csv', untuned_file='/tmp/u.csv')",
            "print('enabled', tunable.current_gemm_mode())",
            "with tunable.gemm_mode('tune', results_file='/tmp/t.csv', untuned_file='/tmp/u2.csv'):",
            "    print('inside', tunable.current_gemm_mode(), tunable._lib.untuned_file())",
            "print('after', tunable.current_gemm_mode(), tunable._lib.untuned_file())",
            "tunable.disable()",
            "print('disabled', tunable.current_gemm_mode())",
            "try:\n tunable.enable('fast')\nexcept ValueError as e:\n print('ERR', e)",
            "try:\n tunable.enable('off')\nexcept ValueError as e:\n print('ERR', e)",
        ])
        r = run_python(code, {"TUNABLE_LIBRARY": LIB, "TUNABLE_FILENAME": "/tmp/env.csv"}, preload=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        self.assertIn("start ('off', '/tmp/env.csv')", out)  # TUNABLE_ENABLED unset: off
        self.assertIn("enabled ('record', '/tmp/r.csv')", out)
        self.assertIn("inside ('tune', '/tmp/t.csv') /tmp/u2.csv", out)
        self.assertIn("after ('record', '/tmp/r.csv') /tmp/u.csv", out)
        self.assertIn("disabled ('off', '/tmp/r.csv')", out)
        self.assertIn("ERR GEMM mode must be one of ['off', 'record', 'tune', 'use'], not 'fast'", out)
        self.assertIn("ERR enable() takes use, record or tune", out)


if __name__ == "__main__":
    unittest.main()
