package bench

import (
	"context"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
)

// TestStartRepicksTakenPort: a target's port, free when the target was
// made, taken by another program before its first start, is chosen again
// (Repick) rather than failing the run; without Repick the start fails.
func TestStartRepicksTakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port

	// /bin/true exits at once: Start then fails for that, not the port.
	p := &Process{Name: "x", Bin: "/bin/true", Port: taken}
	repicked := 0
	p.Repick = func() error {
		repicked++
		p.Port, err = freePort()
		return err
	}
	err = p.Start(context.Background())
	if repicked != 1 || p.Port == taken {
		t.Errorf("Repick called %d times, port %d (taken %d)", repicked, p.Port, taken)
	}
	if err == nil || strings.Contains(err.Error(), "in use") {
		t.Errorf("Start with a repicked port: %v, want the process's exit", err)
	}

	p = &Process{Name: "y", Bin: "/bin/true", Port: taken}
	if err := p.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("Start on a taken port without Repick: %v, want 'in use'", err)
	}
}

// TestMariaDBRelativeWorkDir: a MariaDB target under a relative work
// directory (`basalt bench run --work-dir fin`) makes its data directory:
// mariadb-install-db failed on the relative --datadir it was given.
func TestMariaDBRelativeWorkDir(t *testing.T) {
	t.Chdir(t.TempDir())
	if err := os.Mkdir("work", 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := newMariaDB(TargetSpec{Name: "mariadb", Kind: "mariadb"}, "work")
	if errors.Is(err, errMissing) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := m.initData(); err != nil {
		t.Fatal(err)
	}
}
