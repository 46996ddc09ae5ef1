package compilecache

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The settings of the compile cache, environment variables read once per process
// (ConfigFromEnv).
const (
	// DirEnv is the user's own, writable cache folder (default: DefaultDir); "off" turns the
	// cache off.
	DirEnv = "CIFARLAB_COMPILE_CACHE"
	// SharedEnv lists read-only folders of compiled programs, separated by ':', looked in after
	// the user's own: a workshop's shared layer, filled once (`cifarlab cache warm`).
	SharedEnv = "CIFARLAB_COMPILE_CACHE_SHARED"
	// MaxEnv bounds the size of the user's folder ("4GiB", "500MB", a number of bytes); the
	// programs used longest ago go first.
	MaxEnv = "CIFARLAB_COMPILE_CACHE_MAX"
)

// DefaultMaxBytes is the size bound of the user's folder when MaxEnv is not set.
const DefaultMaxBytes = 4 << 30

// Config says where a Cache is.
type Config struct {
	// Dir is the writable folder, created with mode 0700 when missing; "" has none.
	Dir string
	// Shared are read-only folders, looked in after Dir, in order.
	Shared []string
	// MaxBytes bounds Dir's size (0: DefaultMaxBytes).
	MaxBytes int64
}

// DefaultDir is the user's compile cache folder: os.UserCacheDir()/cifarlab/xla-programs
// (~/.cache/cifarlab/xla-programs), beside the CUDA autotune cache (internal/plugins).
func DefaultDir() (string, error) {
	root, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("compile cache: %w (set $XDG_CACHE_HOME or $HOME, or $%s)", err, DirEnv)
	}
	return filepath.Join(root, "cifarlab", "xla-programs"), nil
}

// ConfigFromEnv is the Config the settings give; off is true when DirEnv is "off" and no shared
// folder is set.
func ConfigFromEnv() (cfg Config, off bool, err error) {
	dir := strings.TrimSpace(os.Getenv(DirEnv))
	switch {
	case strings.EqualFold(dir, "off"):
		dir = ""
	case dir == "":
		if dir, err = DefaultDir(); err != nil {
			return Config{}, false, err
		}
	default:
		if dir, err = filepath.Abs(dir); err != nil {
			return Config{}, false, fmt.Errorf("compile cache: $%s: %w", DirEnv, err)
		}
	}
	cfg.Dir = dir
	for _, s := range filepath.SplitList(os.Getenv(SharedEnv)) {
		if s = strings.TrimSpace(s); s != "" {
			cfg.Shared = append(cfg.Shared, s)
		}
	}
	if v := strings.TrimSpace(os.Getenv(MaxEnv)); v != "" {
		if cfg.MaxBytes, err = ParseSize(v); err != nil {
			return Config{}, false, fmt.Errorf("compile cache: $%s=%q: %w", MaxEnv, v, err)
		}
	}
	return cfg, cfg.Dir == "" && len(cfg.Shared) == 0, nil
}

// sizeUnits are ParseSize's suffixes, longest first.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}

// ParseSize parses a size: a positive number of bytes, or one with a unit ("4GiB", "500MB",
// "64M", "2.5G").
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			s, mult = strings.TrimSpace(rest), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f <= 0 || f*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("not a size (use e.g. 4GiB, 500MB or a number of bytes)")
	}
	return int64(f * float64(mult)), nil
}

// FormatSize is a size for people: "1.2 GiB", "340 KiB", "12 B".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
