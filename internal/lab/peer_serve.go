package lab

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/kernel-labs/kernellabs/internal/results"
)

// A peer of a lab of one process is kept running across the worker's jobs: starting Python,
// importing torch and creating a CUDA context cost about a second a problem, which over lab 02's
// peers was three minutes of a run. labrun starts the script with PeerServeEnv=1; klpeer.main
// then reads one JSON request a line from stdin and writes one JSON reply a line on stdout (what
// the script prints goes to stderr), until stdin closes. A reply that says "failed", a reply that
// is not one, or a process that dies ends the server: the next problem gets a fresh one, so a
// CUDA error that spoils the peer's context costs one entry, as it does for a kernel. Peers of
// ranks are started once a problem (peer_ranks.go): each joins a process group of its own.

// PeerServeEnv tells klpeer.main to serve requests line by line.
const PeerServeEnv = "KLPEER_SERVE"

// peerCloseWait is how long a server may take to leave after its stdin closes.
const peerCloseWait = 5 * time.Second

// peerServer is one running peer script.
type peerServer struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Reader
	stderr  lockedBuffer
	exited  chan struct{} // closed once the process has ended and its output is read
	waitErr error         // the process's end (valid after exited)
}

// lockedBuffer collects the server's stderr while a request reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// take returns what was written since the last take.
func (l *lockedBuffer) take() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := bytes.Clone(l.b.Bytes())
	l.b.Reset()
	return out
}

// startPeerServer starts script as a server. The process is started, waited for and reaped by
// one goroutine locked to its OS thread, since Pdeathsig (kill the peer when the worker dies)
// follows the thread that started the child; like every peer it stays in the worker's process
// group, so the engine's time limit ends it too.
func startPeerServer(script, labDir string) (*peerServer, error) {
	cmd := exec.Command(PythonInterpreter(), script)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(withoutEnv(os.Environ(), SecretSeedEnv),
		"PYTHONPATH="+peerPythonPath(labDir), "PYTHONDONTWRITEBYTECODE=1", PeerServeEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &peerServer{cmd: cmd, in: in, out: bufio.NewReader(out), exited: make(chan struct{})}
	cmd.Stderr = &p.stderr
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// ask sends one request and reads its reply line. A nil error with dead set means the process
// ended before replying (its exit and stderr are in the error the caller builds).
func (p *peerServer) ask(req PeerRequest) (line, stderr []byte, dead bool, err error) {
	p.stderr.take() // what an earlier request left behind is not this one's
	msg, err := json.Marshal(req)
	if err != nil {
		return nil, nil, false, err
	}
	if _, err := p.in.Write(append(msg, '\n')); err != nil {
		return nil, p.finish(), true, nil
	}
	for {
		line, err = p.out.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			return bytes.TrimSpace(line), p.stderr.take(), false, nil
		}
		if err != nil {
			return nil, p.finish(), true, nil
		}
	}
}

// finish waits for a process that has closed its output and returns the rest of its stderr.
func (p *peerServer) finish() []byte {
	select {
	case <-p.exited:
	case <-time.After(peerCloseWait):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
	return p.stderr.take()
}

// close ends the server: stdin closes, and a process that does not leave is killed.
func (p *peerServer) close() {
	_ = p.in.Close()
	p.finish()
}

// kill ends a server whose state is not to be trusted.
func (p *peerServer) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// exitError says how a server that died ended.
func (p *peerServer) exitError() error {
	if p.waitErr != nil {
		return p.waitErr
	}
	return errors.New("it closed its output without replying")
}

// peerServers are a worker's running peers, one per script.
type peerServers map[string]*peerServer

func (ps peerServers) closeAll() {
	for k, p := range ps {
		p.close()
		delete(ps, k)
	}
}

// servePeer asks the script's server (started on first use) for the request's reply. It returns
// the reply as ParsePeerReply reads it, or the error of a server that died (crashed set) or
// answered with something that is not a reply.
func (w *worker) servePeer(script string, req PeerRequest) (r PeerReply, crashed bool, err error) {
	p := w.peers[script]
	if p == nil {
		if p, err = startPeerServer(script, w.man.Dir); err != nil {
			return r, true, fmt.Errorf("starting %s: %w", PythonInterpreter(), err)
		}
		if w.peers == nil {
			w.peers = peerServers{}
		}
		w.peers[script] = p
	}
	line, stderr, dead, err := p.ask(req)
	if err != nil {
		return r, false, err
	}
	if dead {
		delete(w.peers, script)
		return r, true, fmt.Errorf("%w%s", p.exitError(), tailOf(stderr))
	}
	r, err = ParsePeerReply(line)
	if err != nil || r.Status == results.StatusFailed {
		// Whatever went wrong may have spoiled the process (a CUDA error is sticky): a fresh one
		// runs the next problem.
		delete(w.peers, script)
		p.kill()
	}
	if err != nil {
		return r, false, fmt.Errorf("%w%s", err, tailOf(stderr))
	}
	return r, false, nil
}
