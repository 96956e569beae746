package playground

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

// Display writes the playground in dir: whether it runs, and each node
// with its state, found now: "up" (its process lives and it serves, as
// probeNode asks), "not serving: ..." (it lives but does not answer),
// "exited: ..." (it died while the playground ran), "stopped", or "gone"
// (its process has ended unrecorded: the playground itself was killed).
func Display(w io.Writer, dir string) error {
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no playground in %s", dir)
	}
	if err != nil {
		return err
	}
	on := running(dir)
	if on {
		fmt.Fprintf(w, "Playground %q in %s: running (pid %d)\n", st.Name, st.Dir, st.PID)
	} else {
		fmt.Fprintf(w, "Playground %q in %s: not running\n", st.Name, st.Dir)
	}
	states := make([]string, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		wg.Go(func() { states[i] = nodeState(n, on) })
	}
	wg.Wait()
	byName := map[string]string{}
	for i, n := range st.Nodes {
		byName[n.Name] = states[i]
	}
	writeTable(w, st.Dir, st.Nodes, func(n Node) string { return byName[n.Name] })
	return nil
}

// nodeState is a node's state as Display shows it.
func nodeState(n Node, playgroundRuns bool) string {
	switch {
	case n.PID != 0 && alive(n.PID):
		if err := probeNode(context.Background(), &n); err != nil {
			return "not serving: " + err.Error()
		}
		return "up"
	case n.PID != 0:
		return "gone"
	case n.Status == "starting" && !playgroundRuns:
		return "stopped"
	}
	return n.Status
}

// DisplayAll writes every playground under root, running ones first; it
// says so if there is none.
func DisplayAll(w io.Writer, root string) error {
	entries, err := os.ReadDir(root)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	var on, off []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, stateFile)); !e.IsDir() || err != nil {
			continue
		}
		if running(dir) {
			on = append(on, dir)
		} else {
			off = append(off, dir)
		}
	}
	if len(on)+len(off) == 0 {
		fmt.Fprintf(w, "No playground in %s.\n", root)
		return nil
	}
	for i, dir := range append(on, off...) {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if err := Display(w, dir); err != nil {
			return err
		}
	}
	return nil
}
