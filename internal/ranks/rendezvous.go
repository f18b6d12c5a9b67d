package ranks

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kernel-labs/kernellabs/internal/frame"
)

// Group is the ranks of a job, met: they can exchange bytes and wait for each other. Every rank
// calls the same methods in the same order.
type Group interface {
	// AllGather sends data and returns every rank's data, by rank.
	AllGather(ctx context.Context, data []byte) ([][]byte, error)
	Close() error
}

// Barrier waits until every rank of g has reached it.
func Barrier(ctx context.Context, g Group) error {
	_, err := g.AllGather(ctx, nil)
	return err
}

// Meet joins the group of w's job at w.Rendezvous; it returns when every rank has joined (or ctx
// ends). A world of one rank meets alone.
func Meet(ctx context.Context, w World) (Group, error) {
	if w.Size <= 1 {
		return solo{}, nil
	}
	if dir, ok := strings.CutPrefix(w.Rendezvous, "file:"); ok {
		return meetFiles(ctx, w, dir)
	}
	return meetTCP(ctx, w)
}

type solo struct{}

func (solo) AllGather(_ context.Context, data []byte) ([][]byte, error) { return [][]byte{data}, nil }
func (solo) Close() error                                               { return nil }

// maxMessage bounds one rank's data in a round.
const maxMessage = 64 << 20

// ---- TCP: rank 0 listens, every other rank connects; rank 0 gathers and sends back ----

type tcpGroup struct {
	w     World
	mu    sync.Mutex
	conns []net.Conn      // rank 0: by rank (nil at 0)
	rds   []*bufio.Reader // rank 0: by rank
	up    net.Conn        // other ranks: to rank 0
	uprd  *bufio.Reader
	ln    net.Listener
}

func meetTCP(ctx context.Context, w World) (Group, error) {
	g := &tcpGroup{w: w}
	deadline, _ := ctx.Deadline()
	if w.Rank == 0 {
		host, port, err := net.SplitHostPort(w.Rendezvous)
		if err != nil {
			return nil, fmt.Errorf("rendezvous %q: want host:port: %w", w.Rendezvous, err)
		}
		// Ranks of one node meet on the loopback; ranks of several nodes at rank 0's address,
		// which every interface of its node answers.
		bind := ":" + port
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			bind = net.JoinHostPort(host, port)
		}
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", bind)
		if err != nil {
			return nil, fmt.Errorf("rank 0 could not serve the rendezvous on port %s (is it in use? pick another %s): %w", port, EnvMasterPort, err)
		}
		g.ln = ln
		g.conns = make([]net.Conn, w.Size)
		g.rds = make([]*bufio.Reader, w.Size)
		stop := context.AfterFunc(ctx, func() { ln.Close() })
		defer stop()
		for joined := 1; joined < w.Size; {
			c, err := ln.Accept()
			if err != nil {
				g.Close()
				return nil, fmt.Errorf("rank 0 waited for %d of %d ranks to join: %w", w.Size-joined, w.Size-1, ctxErr(ctx, err))
			}
			if !deadline.IsZero() {
				c.SetDeadline(deadline)
			}
			rd := bufio.NewReader(c)
			hello, err := frame.Read(rd, maxMessage)
			var r, n int
			if err == nil {
				_, err = fmt.Sscanf(string(hello), "rank %d of %d", &r, &n)
			}
			switch {
			case err != nil:
				c.Close()
				continue // not a rank of this job
			case n != w.Size || r <= 0 || r >= w.Size || g.conns[r] != nil:
				frame.Write(c, []byte(fmt.Sprintf("refused: rank %d of %d does not fit a job of %d ranks (or joined twice)", r, n, w.Size)))
				c.Close()
				continue
			}
			c.SetDeadline(time.Time{})
			g.conns[r], g.rds[r] = c, rd
			joined++
		}
		for r := 1; r < w.Size; r++ {
			if err := frame.Write(g.conns[r], []byte("welcome")); err != nil {
				g.Close()
				return nil, err
			}
		}
		return g, nil
	}
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", w.Rendezvous)
		if err == nil {
			if !deadline.IsZero() {
				c.SetDeadline(deadline)
			}
			rd := bufio.NewReader(c)
			if err = frame.Write(c, []byte(fmt.Sprintf("rank %d of %d", w.Rank, w.Size))); err == nil {
				var reply []byte
				if reply, err = frame.Read(rd, maxMessage); err == nil && string(reply) != "welcome" {
					err = errors.New(string(reply))
				}
			}
			if err == nil {
				c.SetDeadline(time.Time{})
				g.up, g.uprd = c, rd
				return g, nil
			}
			c.Close()
			if strings.HasPrefix(err.Error(), "refused") {
				return nil, err
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("rank %d could not join the rendezvous at %s: %w", w.Rank, w.Rendezvous, ctxErr(ctx, err))
		case <-time.After(100 * time.Millisecond): // rank 0 may not listen yet
		}
	}
}

func ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return err
}

func (g *tcpGroup) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	deadline, _ := ctx.Deadline()
	if g.w.Rank != 0 {
		g.up.SetDeadline(deadline)
		if err := frame.Write(g.up, data); err != nil {
			return nil, fmt.Errorf("rank %d lost rank 0: %w", g.w.Rank, err)
		}
		all := make([][]byte, g.w.Size)
		for r := range all {
			b, err := frame.Read(g.uprd, maxMessage)
			if err != nil {
				return nil, fmt.Errorf("rank %d lost rank 0 (a rank died?): %w", g.w.Rank, err)
			}
			all[r] = b
		}
		return all, nil
	}
	all := make([][]byte, g.w.Size)
	all[0] = data
	for r := 1; r < g.w.Size; r++ {
		g.conns[r].SetDeadline(deadline)
		b, err := frame.Read(g.rds[r], maxMessage)
		if err != nil {
			return nil, fmt.Errorf("rank 0 lost rank %d (it died?): %w", r, err)
		}
		all[r] = b
	}
	for r := 1; r < g.w.Size; r++ {
		for _, b := range all {
			if err := frame.Write(g.conns[r], b); err != nil {
				return nil, fmt.Errorf("rank 0 lost rank %d (it died?): %w", r, err)
			}
		}
	}
	return all, nil
}

func (g *tcpGroup) Close() error {
	for _, c := range g.conns {
		if c != nil {
			c.Close()
		}
	}
	if g.up != nil {
		g.up.Close()
	}
	if g.ln != nil {
		g.ln.Close()
	}
	return nil
}

// ---- a folder on a shared filesystem: each rank writes its file of a round, then reads all ----

type fileGroup struct {
	w     World
	dir   string
	round int
}

func meetFiles(ctx context.Context, w World, dir string) (Group, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rendezvous folder %s: %w", dir, err)
	}
	g := &fileGroup{w: w, dir: dir}
	if err := Barrier(ctx, g); err != nil {
		return nil, err
	}
	return g, nil
}

func (g *fileGroup) AllGather(ctx context.Context, data []byte) ([][]byte, error) {
	g.round++
	name := func(r int) string { return filepath.Join(g.dir, fmt.Sprintf("round%06d.rank%05d", g.round, r)) }
	tmp := name(g.w.Rank) + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, name(g.w.Rank)); err != nil {
		return nil, err
	}
	all := make([][]byte, g.w.Size)
	for r := range all {
		for {
			b, err := os.ReadFile(name(r))
			if err == nil {
				all[r] = b
				break
			}
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("rank %d waited for rank %d in %s: %w", g.w.Rank, r, g.dir, ctx.Err())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// Everyone has read round-1's files by now (it wrote this round): they can go.
	if g.round > 1 {
		os.Remove(filepath.Join(g.dir, fmt.Sprintf("round%06d.rank%05d", g.round-1, g.w.Rank)))
	}
	return all, nil
}

func (g *fileGroup) Close() error { return nil }

// FreePort asks the kernel for a free TCP port on this node, for the rendezvous of ranks labrun
// starts itself.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
