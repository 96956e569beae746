package playground

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// A playground directory holds:
//
//	playground.json   the state file: the nodes, their ports, PIDs and
//	                  status, rewritten whenever one changes
//	playground.lock   locked (flock) by the running playground
//	pd1/  data/ pd1.log       a PD member's data and log
//	store1/ data/ store1.log  a store's
//	db1/ db1.log              a SQL node's log (it keeps no data)
//	haproxy/ haproxy.cfg haproxy.log
//
// The state file is how display finds a running playground, and how the
// next run on a kept directory (--tag) gives PD and the stores the ports
// their data records.

const (
	stateFile = "playground.json"
	lockFile  = "playground.lock"
)

// State is a playground as its state file records it.
type State struct {
	Name string `json:"name"`
	Tag  string `json:"tag,omitempty"`
	Dir  string `json:"dir"`
	// PID is the playground process's; 0 once it has stopped.
	PID int `json:"pid"`
	// ControlAddr is where the running playground takes scale-out
	// (scale.go).
	ControlAddr string `json:"control_addr,omitempty"`
	Nodes       []Node `json:"nodes"`
}

// ReadState reads the state file of the playground in dir.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

// write replaces the state file at once (write a copy, rename).
func (s *State) write() error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(s.Dir, stateFile))
}

// errRunning is returned by lockDir when another playground holds dir.
var errRunning = errors.New("already running")

// lockDir takes the directory's lock, which is held as long as the
// returned file is open (and released by the kernel if the process
// dies), or returns errRunning.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errRunning
		}
		return nil, err
	}
	return f, nil
}

// running reports whether a playground holds dir's lock now.
func running(dir string) bool {
	f, err := lockDir(dir)
	if err != nil {
		return errors.Is(err, errRunning)
	}
	f.Close()
	return false
}

// checkDir refuses a directory that holds something other than a
// playground: one that exists, is not empty and has no state file.
func checkDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == lockFile })
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, stateFile)); err != nil {
		return fmt.Errorf("%s is not empty and holds no %s: not a playground's directory", dir, stateFile)
	}
	return nil
}

// alive reports whether process pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
