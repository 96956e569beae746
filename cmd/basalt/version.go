package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is Basalt's release version, set when building a release:
//
//	go build -ldflags "-X main.version=v0.1.0" ./cmd/basalt
var version = "dev"

// mysqlVersion is the MySQL version Basalt announces by default (the
// server-version key replaces the whole string). Clients and ORMs branch
// on it: Django 6 refuses MySQL before 8.4, and takes any version string
// containing "mariadb" for MariaDB (whose RETURNING Basalt lacks), so it
// is a MySQL 8.4 version. The MySQL 8.0.13-8.4 features a client may then
// use and Basalt lacks are listed in the README (server-version).
const mysqlVersion = "8.4.0"

// buildInfo says what was built.
type buildInfo struct {
	Version   string // version, or the module's release tag when installed as module@vX.Y.Z
	GitHash   string // the commit built from, "" if unknown
	Modified  bool   // the work tree had uncommitted changes
	GoVersion string
}

func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	// A clean release tag, not a pseudo-version ("v0.0.0-2026...-abcdef")
	// nor a build of a modified tree ("+dirty").
	if v := bi.Main.Version; b.Version == "dev" && strings.HasPrefix(v, "v") && !strings.ContainsAny(v, "-+") {
		b.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.GitHash = s.Value
		case "vcs.modified":
			b.Modified = s.Value == "true"
		}
	}
	return b
}

// ServerVersion is the version of the MySQL greeting and of VERSION():
// "8.4.0-Basalt-dev", as TiDB says "8.0.11-TiDB-v7.5.0", unless the
// configuration's server-version replaces it (serverVersion).
func (b buildInfo) ServerVersion() string {
	return mysqlVersion + "-Basalt-" + b.Version
}

func (b buildInfo) write(w io.Writer) {
	hash := b.GitHash
	switch {
	case hash == "":
		hash = "unknown"
	case b.Modified:
		hash += " (with uncommitted changes)"
	}
	fmt.Fprintf(w, "Basalt %s\nGit commit:    %s\nGo version:    %s\nMySQL version: %s\n",
		b.Version, hash, b.GoVersion, b.ServerVersion())
}

// versionMain is "basalt version", the same as "basalt --version".
func versionMain(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "basalt version: takes no arguments")
		return 2
	}
	readBuildInfo().write(stdout)
	return 0
}
