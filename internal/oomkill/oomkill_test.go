package oomkill

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMemoryDir finds the memory cgroup's folder as hosts and containers show it.
func TestMemoryDir(t *testing.T) {
	v1Host := `22 17 0:20 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
26 22 0:24 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
29 22 0:27 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
35 22 0:33 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`
	v1Cgroup := "9:name=systemd:/\n4:memory:/process_api/b64\n1:cpu:/\n0::/\n"
	// podman on cgroup v1 (cgroupfs): no cgroup namespace; the container's own cgroup is
	// mounted at /sys/fs/cgroup/memory, and /proc/self/cgroup names it by the host's path.
	v1Ctr := `600 590 0:27 /libpod_parent/libpod-abc /sys/fs/cgroup/memory ro,nosuid shared:9 master:3 - cgroup cgroup rw,memory
601 590 0:24 /libpod_parent/libpod-abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup cgroup rw,cpu,cpuacct
`
	v1CtrCgroup := "4:memory:/libpod_parent/libpod-abc\n2:cpu,cpuacct:/libpod_parent/libpod-abc\n"
	v2Host := `30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot
`
	v2HostCgroup := "0::/user.slice/user-1000.slice/session-2.scope\n"
	// A cgroup namespace (podman, Docker on v2): the container's cgroup is "/".
	v2Ctr := `700 690 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw,nsdelegate
`
	// A bind mount of the host's cgroup folder whose root is the container's path.
	v2Bind := `700 690 0:26 /system.slice/docker-abc.scope /sys/fs/cgroup ro - cgroup2 cgroup2 rw
`
	for _, c := range []struct {
		name, mountinfo, cgroup, dir, top string
	}{
		{"v1 host", v1Host, v1Cgroup, "/sys/fs/cgroup/memory/process_api/b64", "/sys/fs/cgroup/memory"},
		{"v1 container", v1Ctr, v1CtrCgroup, "/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory"},
		{"v2 host", v2Host, v2HostCgroup, "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope", "/sys/fs/cgroup"},
		{"v2 namespace", v2Ctr, "0::/\n", "/sys/fs/cgroup", "/sys/fs/cgroup"},
		{"v2 bind mount", v2Bind, "0::/system.slice/docker-abc.scope/init\n", "/sys/fs/cgroup/init", "/sys/fs/cgroup"},
		{"v2 path outside the mount", v2Bind, "0::/other.slice\n", "/sys/fs/cgroup", "/sys/fs/cgroup"},
		{"no cgroup", "22 17 0:20 / / rw - ext4 /dev/vda rw\n", "", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, top := memoryDir([]byte(c.mountinfo), []byte(c.cgroup))
			require.Equal(t, c.dir, dir)
			require.Equal(t, c.top, top)
		})
	}
	require.Equal(t, "/sys/fs/cgroup/a b", unescape(`/sys/fs/cgroup/a\040b`))
}

// TestGrew reads counts and limits from cgroup folders written here: the innermost folder whose
// count grew is the one named, with the smallest limit from there up (v1 and v2 files).
func TestGrew(t *testing.T) {
	top := t.TempDir()
	inner := filepath.Join(top, "ctr")
	require.NoError(t, os.Mkdir(inner, 0o755))
	write := func(dir, name, text string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	write(top, "memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\noom_group_kill 0\n")
	write(top, "memory.max", "max\n")
	write(inner, "memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n")
	write(inner, "memory.limit_in_bytes", "3221225472\n")
	before := Snapshot{groups: []group{{inner, 1}, {top, 2}}}
	now := Snapshot{groups: []group{{inner, 1}, {top, 2}}}
	require.Nil(t, grew(before, now), "no count grew")

	n, ok := kills(inner)
	require.True(t, ok)
	require.EqualValues(t, 1, n)
	n, ok = kills(top)
	require.True(t, ok)
	require.EqualValues(t, 2, n)
	require.EqualValues(t, 3<<30, limit(inner))
	require.Zero(t, limit(top), `"max" is no limit`)
	write(top, "memory.max", "8589934592\n")
	require.EqualValues(t, 8<<30, limit(top))

	now = Snapshot{groups: []group{{inner, 3}, {top, 4}}}
	k := grew(before, now)
	require.Equal(t, &Kill{Cgroup: inner, Kills: 2, Limit: 3 << 30}, k)
	require.Equal(t, "3.0 GiB", k.LimitText())
	require.Equal(t, "memory ran out (limit 3.0 GiB, memory cgroup "+inner+": 2 out-of-memory kills)", k.String())

	// Only the outer count grew (v2 counts a kill in every ancestor): the outer one is named,
	// with its own limit.
	now = Snapshot{groups: []group{{inner, 1}, {top, 3}}}
	require.Equal(t, &Kill{Cgroup: top, Kills: 1, Limit: 8 << 30}, grew(before, now))
	// A v1 machine without limits: the v1 value for none.
	write(top, "memory.max", "9223372036854771712\n")
	require.Equal(t, "the machine's memory", grew(before, now).LimitText())
	require.Equal(t, Advice, k.Advice())
	require.True(t, strings.HasSuffix(grew(before, now).Advice(), "or run it where there is more memory"))

	text, err := before.MarshalText()
	require.NoError(t, err)
	var back Snapshot
	require.NoError(t, back.UnmarshalText(text))
	require.Equal(t, before, back)
	require.Error(t, back.UnmarshalText([]byte("not a count\n")))
}
