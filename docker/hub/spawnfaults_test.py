"""Unit tests of docker/hub/spawnfaults.py (python3 -m unittest, stdlib only; run by docker/lint.sh).
docker/hub/test.sh checks the same faults through a real hub, on the attendee's page."""

import unittest

from spawnfaults import attendee_message, engine_fault, exit_fault, free_memory_fault

# What a container of the image built at f035eac printed on overlay storage (issue 53).
EXDEV = ("cifarlab kernel: writing the cells' pinned module proxy /opt/cifarlab/.bin/cell-proxy: rename "
         "/opt/cifarlab/.bin/cell-proxy /opt/cifarlab/.bin/cell-proxy.old: invalid cross-device link")


class Faults(unittest.TestCase):
    def test_storage(self):
        f = exit_fault(1, False, ["cifarlab: CUDA kernel: GOMLX_BACKEND=xla:cuda", EXDEV])
        self.assertEqual("storage", f.kind)
        self.assertEqual("the image cannot run on this machine's container storage", f.what)
        self.assertIn("rebuild the image from a current cifarlab checkout", f.fix)
        self.assertIn("exit code 1; its last lines:", f.detail)
        self.assertIn(EXDEV, f.detail)
        msg = attendee_message(f)
        self.assertTrue(msg.startswith("Your server could not start: the image cannot run on this machine's container storage. Tell the organiser."), msg)
        self.assertIn("For the organiser: the image renames a folder of its own layers", msg)
        self.assertIn(EXDEV, msg)

    def test_memory_limit(self):
        f = exit_fault(137, True, ["cifarlab: mode cpu: new notebooks use the kernel cifarlab-cpu"], mem_limit=64 * 2**20)
        self.assertEqual(("memory", "memory ran out while the server started (its limit is 64 MiB)"), (f.kind, f.what))
        self.assertIn("raise CIFARLAB_HUB_MEM", f.fix)
        self.assertIn("Try again in a few minutes", attendee_message(f))

    def test_killed_on_a_full_machine(self):
        f = exit_fault(137, False, [], mem_available=100 * 2**20)
        self.assertEqual("memory", f.kind)
        self.assertIn("this machine has only 100 MiB of memory left", f.what)
        self.assertIn("it printed nothing", f.detail)
        # Killed on a machine with memory to spare: not called memory.
        self.assertEqual("other", exit_fault(137, False, ["x"], mem_available=8 * 2**30).kind)

    def test_other_exit_says_the_last_line(self):
        f = exit_fault(2, False, ["a", "cifarlab: CIFARLAB_MODE=gpux: use auto, gpu or cpu"])
        self.assertEqual("the server's container exited with code 2 while it started: cifarlab: CIFARLAB_MODE=gpux: use auto, gpu or cpu", f.what)

    def test_free_memory(self):
        f = free_memory_fault(300 * 2**20, 2**30)
        self.assertEqual("this machine has only 300 MiB of memory free, and a server needs 1024 MiB to start", f.what)
        self.assertIn("CIFARLAB_HUB_START_MEM", f.fix)

    def test_engine(self):
        for text, kind in [
            ("failed to find image localhost/cifarlab-x:1: localhost/cifarlab-x:1: image not known", "image"),
            ("404 Client Error for http+docker://localhost/v1.41/images/cifarlab:workshop/json: Not Found (\"No such image: cifarlab:workshop\")", "image"),
            ("crun: error setting rlimit type 7: operation not permitted: OCI permission denied", "rlimit"),
            ("could not find slirp4netns, the network namespace can't be configured", "network"),
            ("mounting volume cifarlab-hub-work-bob: no such device", "volume"),
            ("write /var/lib/containers/storage/x: no space left on device", "disk"),
            ("something new", "other"),
        ]:
            self.assertEqual(kind, engine_fault(text, "cifarlab:workshop").kind, text)
        self.assertIn("under the name CIFARLAB_HUB_IMAGE gives", engine_fault("image not known", "cifarlab:workshop").fix)
        self.assertIn("rlimit 7: nofile, open files", engine_fault("error setting rlimit type 7: x").what)


if __name__ == "__main__":
    unittest.main()
