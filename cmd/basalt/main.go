// Command basalt is Basalt's one binary. With no command it runs a server:
// the MySQL protocol on --port over the embedded store in --data-dir, and
// the HTTP status port (/status, /metrics, /debug/pprof/).
//
//	basalt [flags]             run the server; basalt -h lists the flags
//	basalt version             print the version
//	basalt bench run|report    the Sysbench test plan and its report
//	basalt pd [flags]          a placement driver member (cluster mode)
//	basalt store [flags]       a storage node (cluster mode; in progress)
//	basalt ctl store|region|member
//	                           the cluster as tables, from PD's HTTP API
//	basalt playground [display]
//	                           a cluster of processes on this machine
//
// The files: main.go picks the command; serve.go is the server command,
// from flags to exit status; node.go starts and stops the pieces of a
// running server; options.go maps the configuration onto each piece;
// engine.go creates the SQL engine; status.go serves the status port;
// version.go says what was built; bench.go is the bench command (package
// bench does the work); pd.go is the pd command (package pd does the
// work); store.go is the store command (package storenode does the
// work); ctl.go is the ctl command; playground.go is the playground
// command (package playground does the work).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// command is a subcommand: it gets the arguments after its name and
// returns the exit status.
type command func(args []string, stdout, stderr io.Writer) int

// commands are the subcommands, by name.
var commands = map[string]command{
	"version":    versionMain,
	"bench":      benchMain,
	"pd":         pdMain,
	"store":      storeMain,
	"ctl":        ctlMain,
	"playground": playgroundMain,
}

// run runs the command args name, or the server if args[0] is a flag or
// absent, and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, ok := commands[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "basalt: unknown command %q (run basalt -h for help)\n", args[0])
			return 2
		}
		return cmd(args[1:], stdout, stderr)
	}
	return serveMain(args, stdout, stderr)
}

// parseFlags parses a command's args into fs. When it returns false the
// command ends with code: 0 after -h, 2 after a bad flag (fs has said
// what was wrong).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	return 0, true
}

// fileFlags are a command's flags that override its --config file: each
// is parsed into a value of its own, and set on the configuration only if
// it was given on the command line, once the file has been read (apply).
type fileFlags struct {
	fs  *flag.FlagSet
	set map[string]func(string)
}

func newFileFlags(fs *flag.FlagSet) *fileFlags {
	return &fileFlags{fs: fs, set: map[string]func(string){}}
}

// String defines a flag that sets field; its default is field's value.
func (f *fileFlags) String(name string, field *string, usage string) {
	f.Func(name, *field, usage, func(v string) { *field = v })
}

// Func defines a flag whose default, as -h shows it, is value; if the
// flag is given, apply passes its value to set.
func (f *fileFlags) Func(name, value, usage string, set func(string)) {
	f.fs.String(name, value, usage)
	f.set[name] = set
}

// apply sets the flags given on the command line.
func (f *fileFlags) apply() {
	f.fs.Visit(func(fl *flag.Flag) {
		if set, ok := f.set[fl.Name]; ok {
			set(fl.Value.String())
		}
	})
}
