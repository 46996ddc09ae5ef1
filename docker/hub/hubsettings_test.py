"""Unit tests of docker/hub/hubsettings.py's capacity line (python3 -m unittest, stdlib only; run by
docker/lint.sh and docker/hub/test.sh)."""

import os
import re
import tempfile
import unittest

from hubsettings import SettingsError, capacity_line, settings_from_env

GIB = 2**30
# What an attendee running notebooks 01-04 peaks at (docker/hub/RESULTS.md).
PEAK_BYTES = 2.5e9


def advised_mem(line):
    m = re.search(r"(?:set|with) CIFARLAB_HUB_MEM=([0-9.]+)G", line)
    return float(m.group(1)) * GIB if m else None


class CapacityLine(unittest.TestCase):
    def test_issue_53_host(self):
        # The issue's host: 24 GiB, the defaults (30 users at 4G). At f035eac the line advised
        # CIFARLAB_HUB_MEM=0.5G, a fifth of what notebooks 01-04 take.
        line = capacity_line({}, 2, 24 * GIB)
        self.assertIn("it holds 9 attendees at the measured peak of 2.5 GB each (notebooks 01-04) and 5 at the limit of 4G each", line)
        self.assertIn("30 attendees do not fit at the peak; set CIFARLAB_HUB_USERS=9 with CIFARLAB_HUB_MEM=2.4G", line)
        self.assertGreaterEqual(advised_mem(line), PEAK_BYTES)

    def test_gpu_machine(self):
        # A 16-core, 125 GiB machine: 30 fit at the peak, 28 at 4G; the advice stays above the peak.
        line = capacity_line({}, 16, 125 * GIB)
        self.assertIn("it holds 48 attendees at the measured peak of 2.5 GB each (notebooks 01-04) and 28 at the limit of 4G each", line)
        self.assertIn("set CIFARLAB_HUB_MEM=3.7G (90% of the machine for 30, above the peak) or CIFARLAB_HUB_USERS=28", line)
        self.assertGreaterEqual(advised_mem(line), PEAK_BYTES)

    def test_limit_under_the_peak_is_said(self):
        line = capacity_line({"CIFARLAB_HUB_MEM": "0.5G", "CIFARLAB_HUB_USERS": "4"}, 16, 125 * GIB)
        self.assertIn("CIFARLAB_HUB_MEM=0.5G is under that peak: attendees running notebooks 01-04 run out of memory; set CIFARLAB_HUB_MEM=2.4G or more", line)

    def test_never_advises_under_the_peak(self):
        for host_gib in (4, 8, 16, 24, 32, 64, 125, 256, 1024):
            for users in (1, 2, 4, 10, 30, 100, 300):
                for mem in ("2.4G", "3G", "4G", "8G"):
                    line = capacity_line({"CIFARLAB_HUB_USERS": str(users), "CIFARLAB_HUB_MEM": mem}, 16, host_gib * GIB)
                    advised = advised_mem(line)
                    if advised is not None:
                        self.assertGreaterEqual(advised, PEAK_BYTES, line)
                    m = re.search(r"CIFARLAB_HUB_USERS=(\d+)", line)
                    if m and advised:
                        self.assertLessEqual(int(m.group(1)) * advised, 0.9 * host_gib * GIB + 1, line)

    def test_fits(self):
        line = capacity_line({"CIFARLAB_HUB_USERS": "4", "CIFARLAB_HUB_MEM": "3G", "CIFARLAB_HUB_CPU": "1"}, 2, 24 * GIB)
        self.assertTrue(line.endswith("and 7 at the limit of 3G each (CPU limits are caps on shared cores: attendees who run cells at once share them)"), line)
        self.assertNotIn("set CIFARLAB_HUB", line)


class CompileCacheFolder(unittest.TestCase):
    """CIFARLAB_HUB_COMPILE_CACHE: a host folder of compiled programs, mounted read-only in every server and
    listed in its CIFARLAB_COMPILE_CACHE_SHARED before the image's own."""

    def settings(self, **env):
        return settings_from_env({"CIFARLAB_HUB_SIGNUP_CODE": "code-12345", "CIFARLAB_HUB_ENGINE": "podman", **env})

    def test_none(self):
        s = self.settings()
        self.assertEqual({}, s.read_only_volumes())
        self.assertNotIn("CIFARLAB_COMPILE_CACHE_SHARED", s.environment(), "the image's own ENV holds")

    def test_mounted_read_only_and_listed_first(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o755)
            s = self.settings(CIFARLAB_HUB_COMPILE_CACHE=d)
            self.assertEqual({d: "/srv/cifarlab/compile-cache"}, s.read_only_volumes())
            self.assertEqual("/srv/cifarlab/compile-cache:/opt/cifarlab/compile-cache", s.environment()["CIFARLAB_COMPILE_CACHE_SHARED"])

    def test_refused(self):
        with tempfile.TemporaryDirectory() as d:
            os.chmod(d, 0o777)
            for value, says in ((d, f"CIFARLAB_HUB_COMPILE_CACHE={d} is writable by other users (mode 0777)"),
                                ("relative/dir", "is not an absolute path"),
                                (os.path.join(d, "missing"), "is not a folder on this host; fill it before the event")):
                with self.assertRaises(SettingsError) as e:
                    self.settings(CIFARLAB_HUB_COMPILE_CACHE=value)
                self.assertIn(says, str(e.exception))


if __name__ == "__main__":
    unittest.main()
