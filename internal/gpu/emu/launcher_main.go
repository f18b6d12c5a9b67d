//go:build cgo

package emu

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"

	"github.com/kernel-labs/kernellabs/internal/gpu"
	"github.com/kernel-labs/kernellabs/internal/sandbox"
)

// LauncherMain is the launcher process (labrun's hidden "__emu-launcher" command, started by
// startLauncher inside the sandbox). It reads requests on descriptor 3 and answers them: load a
// module, map or unmap a buffer's memfd at the address labrun gives, run a launch. It returns
// the process's exit status.
func LauncherMain() int {
	fail := func(format string, a ...any) int {
		fmt.Fprintf(os.Stderr, "labrun launcher: "+format+"\n", a...)
		return 125
	}
	// The wrapper confined the filesystem and the network; no new processes either, from here on,
	// before any untrusted code is loaded.
	if err := sandbox.ForbidSpawn(); err != nil {
		return fail("%v", err)
	}
	f := os.NewFile(3, "labrun")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return fail("opening the channel to labrun: %v", err)
	}
	conn, ok := c.(*net.UnixConn)
	if !ok {
		return fail("descriptor 3 is not a unix socket")
	}
	s := &launcherServer{conn: conn}
	return s.serve()
}

type launcherServer struct {
	conn *net.UnixConn
	wmu  sync.Mutex
	lib  *lib

	buf []byte // bytes read but not yet parsed
	fds []int  // descriptors received, in order: each map request takes the next one
}

// next reads the next request, collecting the descriptors that arrive with it.
func (s *launcherServer) next() (*lmsg, error) {
	for {
		if len(s.buf) >= 4 {
			n := int(uint32(s.buf[0]) | uint32(s.buf[1])<<8 | uint32(s.buf[2])<<16 | uint32(s.buf[3])<<24)
			if n > maxFrame {
				return nil, fmt.Errorf("a request of %d bytes is over the limit", n)
			}
			if len(s.buf) >= 4+n {
				m, err := readFrame(bytes.NewReader(s.buf[:4+n]))
				s.buf = s.buf[4+n:]
				return m, err
			}
		}
		data := make([]byte, 64<<10)
		oob := make([]byte, syscall.CmsgSpace(16*4))
		n, oobn, _, _, err := s.conn.ReadMsgUnix(data, oob)
		if oobn > 0 {
			msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn])
			if perr == nil {
				for _, cm := range msgs {
					if fds, ferr := syscall.ParseUnixRights(&cm); ferr == nil {
						s.fds = append(s.fds, fds...)
					}
				}
			}
		}
		if n > 0 {
			s.buf = append(s.buf, data[:n]...)
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, fmt.Errorf("labrun closed the channel")
		}
	}
}

func (s *launcherServer) reply(m *lmsg) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := writeFrame(s.conn, m); err != nil {
		os.Exit(0) // labrun is gone: nothing left to do
	}
}

func (s *launcherServer) serve() int {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		m, err := s.next()
		if err != nil {
			return 0 // labrun closed the channel
		}
		r := &lmsg{Op: m.Op, ID: m.ID}
		switch m.Op {
		case "load":
			if s.lib != nil {
				r.Err = "a launcher loads one module"
				break
			}
			l, err := dlopenModule(m.Path)
			if err != nil {
				r.Err = err.Error()
				break
			}
			s.lib = l
			for _, e := range l.entries {
				r.Entries = append(r.Entries, lentry{Name: e.name, Sizes: e.sizes, Types: e.types, MaxThreads: e.maxThreads, WarpSize: e.warpSize})
			}
		case "map":
			if len(s.fds) == 0 {
				r.Err = "a map request came without its memfd"
				break
			}
			fd := s.fds[0]
			s.fds = s.fds[1:]
			if e := cMap(m.Base, m.Bytes, fd); e != 0 {
				r.Err = fmt.Sprintf("mapping a buffer of %d bytes at 0x%x: %v", m.Bytes, m.Base, syscall.Errno(e))
			}
			closeFD(fd)
		case "unmap":
			cUnmap(m.Base, m.Bytes)
		case "launch":
			if s.lib == nil || m.Entry < 0 || m.Entry >= len(s.lib.entries) {
				r.Err = "launch of an unknown kernel"
				break
			}
			wg.Add(1)
			go func(m *lmsg) {
				defer wg.Done()
				e := &s.lib.entries[m.Entry]
				res := cLaunch(s.lib, e, m.Args, gpu.Dim3{X: m.Grid[0], Y: m.Grid[1], Z: m.Grid[2]},
					gpu.Dim3{X: m.Block[0], Y: m.Block[1], Z: m.Block[2]}, m.Shared, m.Workers, m.TimeoutMs)
				s.reply(&lmsg{Op: m.Op, ID: m.ID, Result: toWire(res)})
			}(m)
			continue
		default:
			r.Err = "unknown request " + m.Op
		}
		s.reply(r)
	}
}
