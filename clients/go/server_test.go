package preemptd_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// repoRoot is the repository holding this module (clients/go).
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Dir(filepath.Dir(wd))
}

// serverBinary is $PREEMPTD_BIN or <repo>/target/debug/preemptd (built by `cargo build`).
func serverBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PREEMPTD_BIN")
	if bin == "" {
		bin = filepath.Join(repoRoot(t), "target", "debug", "preemptd")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("preemptd binary %s: %v (run `cargo build` or set PREEMPTD_BIN)", bin, err)
	}
	return bin
}

// server is a `preemptd serve` child process on a loopback port.
type server struct {
	t      *testing.T
	bin    string
	args   []string
	addr   string
	cmd    *exec.Cmd
	exited chan error
}

// startServer runs `preemptd serve` on 127.0.0.1:0 with extra flags and waits for the
// address it bound, which its json log line "serving" names. It is stopped at cleanup.
func startServer(t *testing.T, extra ...string) *server {
	t.Helper()
	s := &server{t: t, bin: serverBinary(t), args: extra}
	s.start("127.0.0.1:0")
	t.Cleanup(s.stop)
	return s
}

func (s *server) start(listen string) {
	s.t.Helper()
	args := append([]string{"serve", "--listen", listen, "--metrics-listen", "off", "--log-format", "json"}, s.args...)
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "RUST_LOG=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.bin, err)
	}
	s.cmd = cmd
	s.exited = make(chan error, 1)
	addr := make(chan string, 1)
	go func() {
		lines := bufio.NewScanner(stderr)
		sent := false
		for lines.Scan() {
			var line struct {
				Fields struct {
					Message string `json:"message"`
					Addr    string `json:"addr"`
				} `json:"fields"`
			}
			if !sent && json.Unmarshal(lines.Bytes(), &line) == nil && line.Fields.Message == "serving" {
				addr <- line.Fields.Addr
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		s.exited <- cmd.Wait()
	}()
	select {
	case s.addr = <-addr:
	case err := <-s.exited:
		s.t.Fatalf("preemptd exited before serving: %v", err)
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		s.t.Fatal("preemptd did not log \"serving\" within 30s")
	}
}

// stop sends SIGTERM and waits; the server drains and exits 0.
func (s *server) stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Errorf("preemptd exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		_ = s.cmd.Process.Kill()
		s.t.Error("preemptd did not exit within 20s of SIGTERM")
	}
	s.cmd = nil
}

// restart stops the server and starts a new one on the same address.
func (s *server) restart() {
	s.t.Helper()
	s.stop()
	want := s.addr
	s.start(want)
	if s.addr != want {
		s.t.Fatalf("restarted on %s, want %s", s.addr, want)
	}
}

func (s *server) String() string {
	return fmt.Sprintf("preemptd at %s (%s)", s.addr, strings.Join(s.args, " "))
}
