package backends

import (
	"sync"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
	"github.com/gomlx/go-xla/pjrt"
)

// ProgramRecord is one program that an XLA backend of this process compiled, or loaded from the
// compile cache instead (see CompileCache): a run's timeline tells its graph's build from its
// compile or load by it.
type ProgramRecord struct {
	// Name is the program's name (its StableHLO module's, e.g. "Trainer_1"), Bytes the size of
	// its program text.
	Name  string
	Bytes int
	// Start is when XLA received the program: building its graph had ended. Duration is how long
	// the compile (and storing it in the cache) or the load took.
	Start    time.Time
	Duration time.Duration
	// Loaded is true when the program came from the compile cache, not from a compile.
	Loaded bool
	// Notes are the lines the compile cache said meanwhile (a broken entry, a folder it cannot
	// write), also written to standard error; each is said once per process.
	Notes []string

	client *pjrt.Client
}

// maxProgramRecords is how many records the process keeps (the oldest go first).
const maxProgramRecords = 1024

// programLog holds the records of the process, numbered from 0.
var programLog struct {
	mu      sync.Mutex
	records []ProgramRecord
	first   int // the number of records[0]
}

// addProgramRecord records r.
func addProgramRecord(r ProgramRecord) {
	programLog.mu.Lock()
	defer programLog.mu.Unlock()
	programLog.records = append(programLog.records, r)
	if n := len(programLog.records) - maxProgramRecords; n > 0 {
		programLog.records = append([]ProgramRecord(nil), programLog.records[n:]...)
		programLog.first += n
	}
}

// ProgramMark returns the number of programs recorded so far: ProgramsSince(b, mark) returns
// those recorded after it.
func ProgramMark() int {
	programLog.mu.Lock()
	defer programLog.mu.Unlock()
	return programLog.first + len(programLog.records)
}

// ProgramsSince returns the programs that b compiled or loaded since mark (ProgramMark), in
// order; none for the pure-Go backend, which compiles nothing with XLA, or for a Lazy backend
// not created yet.
func ProgramsSince(b compute.Backend, mark int) []ProgramRecord {
	xb, ok := resolved(b, false).(*xla.Backend)
	if !ok || xb == nil {
		return nil
	}
	client := xb.PJRTClient()
	programLog.mu.Lock()
	defer programLog.mu.Unlock()
	var out []ProgramRecord
	for i := max(0, mark-programLog.first); i < len(programLog.records); i++ {
		if r := programLog.records[i]; r.client == client {
			out = append(out, r)
		}
	}
	return out
}
