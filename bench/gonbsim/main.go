// Command gonbsim runs prebuilt notebook cell binaries as GoNB runs a cell's program, without
// Jupyter (bench/gpu.sh stage 13, issue 48 item 5): each cell is a child of this process (the
// "kernel", whose end the lab process watches), with the kernel's folder in $GONB_TMP_DIR and
// GoNB's two named pipes ($GONB_PIPE, $GONB_PIPE_BACK), on which it takes the cell's displays and
// answers gonbui.Sync as GoNB does. Several kernels can run side by side, their cells interleaved.
//
//	gonbsim -cells CELLS -dir DIR [-json OUT.jsonl] [-idle 5s]
//
// CELLS has one cell per line: a kernel name, then the binary and its arguments (split on
// spaces); each kernel's folder is DIR/KERNEL. For each cell it prints, and writes to OUT as a JSON
// line: the wall time from its start to its exit, when its first output came (a byte on stdout or
// stderr, or a display), its exit status, its report line (a line "labcell: {...}" it printed,
// bench/labcell), and, on a machine with nvidia-smi, the GPU memory its process held at most and
// the kernel's lab process held at most while it ran and when it ended, with the lab process's
// resident memory. After the last cell it waits -idle and samples each lab process again ("idle"
// rows), then ends, and with it the lab processes (they watch their kernel).
package main

import (
	"bufio"
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/janpfeifer/gonb/gonbui/protocol"
)

// row is what gonbsim reports of a cell (or, Cell "idle", of a kernel's lab process at the end).
type row struct {
	Kernel string          `json:"kernel"`
	Cell   string          `json:"cell"`
	Wall   float64         `json:"wall_s"`
	First  *float64        `json:"first_output_s,omitempty"`
	Exit   int             `json:"exit"`
	Report json.RawMessage `json:"report,omitempty"`
	// The GPU memory (MiB) the cell's process and the lab process held at most while the cell
	// ran, and the lab process's when it ended; null without nvidia-smi.
	CellGPU    *int   `json:"cell_gpu_mib_peak"`
	LabGPUPeak *int   `json:"lab_gpu_mib_peak"`
	LabGPU     *int   `json:"lab_gpu_mib"`
	LabPID     int    `json:"lab_pid,omitempty"`
	LabRSS     int    `json:"lab_rss_mib,omitempty"`
	Output     string `json:"-"`
}

func main() {
	cells := flag.String("cells", "", "file of cells: one per line, KERNEL BINARY [ARGS...]")
	dir := flag.String("dir", "", "folder of the kernels' folders ($GONB_TMP_DIR of kernel K is DIR/K)")
	out := flag.String("json", "", "append each cell's row to this JSON lines file")
	idle := flag.Duration("idle", 5*time.Second, "after the last cell, wait this long, then sample each lab process again")
	flag.Parse()
	if *cells == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	b, err := os.ReadFile(*cells)
	if err != nil {
		fail(err)
	}
	var sink io.Writer = io.Discard
	if *out != "" {
		f, err := os.OpenFile(*out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		sink = f
	}
	kernels := map[string]bool{}
	var order []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") {
			continue
		}
		folder := filepath.Join(*dir, f[0])
		if !kernels[f[0]] {
			kernels[f[0]] = true
			order = append(order, f[0])
			if err := os.MkdirAll(folder, 0o700); err != nil {
				fail(err)
			}
		}
		r := runCell(f[0], folder, f[1], f[2:])
		emit(sink, r)
	}
	time.Sleep(*idle)
	for _, k := range order {
		r := row{Kernel: k, Cell: "idle"}
		r.LabPID = labPID(filepath.Join(*dir, k))
		r.LabRSS = rssMiB(r.LabPID)
		if m, ok := gpuMemory(); ok {
			v := m[r.LabPID]
			r.LabGPU = &v
		}
		emit(sink, r)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "gonbsim:", err)
	os.Exit(1)
}

// emit prints r and writes it as a JSON line to sink.
func emit(sink io.Writer, r row) {
	b, _ := json.Marshal(r)
	fmt.Printf("gonbsim: %s\n", b)
	fmt.Fprintf(sink, "%s\n", b)
}

// runCell runs one cell's binary as GoNB would, in the kernel folder, and reports it.
func runCell(kernel, folder, bin string, args []string) row {
	r := row{Kernel: kernel, Cell: strings.TrimSpace(filepath.Base(bin) + " " + strings.Join(args, " "))}
	pipe, back := filepath.Join(folder, "gonb_pipe"), filepath.Join(folder, "gonb_pipe_back")
	for _, p := range []string{pipe, back} {
		_ = os.Remove(p)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			fail(err)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = folder
	cmd.Env = append(os.Environ(), "GONB_TMP_DIR="+folder, protocol.GONB_PIPE_ENV+"="+pipe, protocol.GONB_PIPE_BACK_ENV+"="+back)
	var output bytes.Buffer
	first := newFirst()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fail(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the cell's output, echoed
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, err := stdout.Read(buf)
			if n > 0 {
				first.mark()
				output.Write(buf[:n])
				os.Stdout.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // GoNB's side of the pipes
		defer wg.Done()
		servePipes(pipe, back, first, done)
	}()
	peak := samplePeaks(cmd.Process.Pid, folder, done)
	err := cmd.Wait()
	r.Wall = time.Since(start).Seconds()
	close(done)
	wg.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.Exit = exit.ExitCode()
	} else if err != nil {
		r.Exit = -1
	}
	if at := first.at(); !at.IsZero() {
		s := at.Sub(start).Seconds()
		r.First = &s
	}
	sc := bufio.NewScanner(bytes.NewReader(output.Bytes()))
	for sc.Scan() {
		if rep, ok := strings.CutPrefix(sc.Text(), "labcell: "); ok && json.Valid([]byte(rep)) {
			r.Report = json.RawMessage(rep)
		}
	}
	r.LabPID = labPID(folder)
	r.LabRSS = rssMiB(r.LabPID)
	if p := <-peak; p.ok {
		r.CellGPU, r.LabGPUPeak = &p.cell, &p.lab
		if m, ok := gpuMemory(); ok {
			v := m[r.LabPID]
			r.LabGPU = &v
		}
	}
	return r
}

// first records when a cell's first output came.
type first struct {
	mu sync.Mutex
	t  time.Time
}

func newFirst() *first { return &first{} }

func (f *first) mark() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.t.IsZero() {
		f.t = time.Now()
	}
}

func (f *first) at() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

// servePipes is GoNB's side of the named pipes: it reads the cell's displays (the first one is
// output), answers its gonbui.Sync requests, and, when the cell ends without having opened
// them, opens them itself so that nothing waits.
func servePipes(pipe, back string, first *first, done chan struct{}) {
	acks := make(chan int, 64)
	go func() { // GONB_PIPE_BACK: the acknowledgements
		w, err := os.OpenFile(back, os.O_WRONLY, 0o600)
		if err != nil {
			return
		}
		defer w.Close()
		enc := gob.NewEncoder(w)
		for {
			select {
			case id := <-acks:
				_ = enc.Encode(&protocol.CommValue{Address: protocol.GonbuiSyncAckAddress, Value: id})
			case <-done:
				return
			}
		}
	}()
	go func() { // a cell that never opened the pipes: unblock both opens
		<-done
		if f, err := os.OpenFile(pipe, os.O_WRONLY|syscall.O_NONBLOCK, 0o600); err == nil {
			f.Close()
		}
		if f, err := os.OpenFile(back, os.O_RDONLY|syscall.O_NONBLOCK, 0o600); err == nil {
			f.Close()
		}
	}()
	r, err := os.Open(pipe)
	if err != nil {
		return
	}
	defer r.Close()
	dec := gob.NewDecoder(r)
	for {
		var d protocol.DisplayData
		if err := dec.Decode(&d); err != nil {
			return
		}
		if v, ok := d.Data[protocol.MIMECommValue]; ok {
			if c, ok := v.(protocol.CommValue); ok && c.Address == protocol.GonbuiSyncAddress {
				if id, ok := c.Value.(int); ok {
					acks <- id
				}
			}
			continue
		}
		first.mark()
	}
}

// peaks is the most GPU memory (MiB) the cell and the lab process held while the cell ran.
type peaks struct {
	cell, lab int
	ok        bool
}

// samplePeaks samples the GPU memory of the cell (pid) and of the kernel's lab process every
// half second until done, and sends the peaks.
func samplePeaks(pid int, folder string, done chan struct{}) chan peaks {
	out := make(chan peaks, 1)
	go func() {
		var p peaks
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if m, ok := gpuMemory(); ok {
				p.ok = true
				p.cell, p.lab = max(p.cell, m[pid]), max(p.lab, m[labPID(folder)])
			}
			select {
			case <-done:
				out <- p
				return
			case <-t.C:
			}
		}
	}()
	return out
}

// gpuMemory returns the GPU memory (MiB) each process holds, as nvidia-smi reports it; false
// without nvidia-smi.
func gpuMemory() (map[int]int, bool) {
	b, err := exec.Command("nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits").Output()
	if err != nil {
		return nil, false
	}
	m := map[int]int{}
	for _, line := range strings.Split(string(b), "\n") {
		pid, mem, ok := strings.Cut(line, ",")
		if !ok {
			continue
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(pid))
		v, err2 := strconv.Atoi(strings.TrimSpace(mem))
		if err1 == nil && err2 == nil {
			m[p] += v
		}
	}
	return m, true
}

// labPID is the kernel's lab process, as its pid file says (0: none).
func labPID(folder string) int {
	b, err := os.ReadFile(filepath.Join(folder, "cifarlab-lab", "lab.pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// rssMiB is the resident memory of process pid (0 when it is gone).
func rssMiB(pid int) int {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return kb / 1024
		}
	}
	return 0
}
