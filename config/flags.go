package config

import (
	"flag"
	"time"
)

// Flags are the command-line flags that override the file. Register them
// on a FlagSet, parse it, Load the file named by ConfigFile (if any), then
// Apply: only the flags given on the command line override.
//
// Each flag has the name this package's brief uses and, where TiDB's
// binary spells it differently, TiDB's name too (-P, -L, --path, --status).
type Flags struct {
	// ConfigFile is the value of --config: the file to Load, "" for none.
	ConfigFile string

	fs                                                          *flag.FlagSet
	host, store, dataDir, rootPassword, level, logFile, slowLog string
	sslCert, sslKey                                             string
	port, statusPort                                            int
	lease                                                       durationFlag
}

// durationFlag is a flag.Value over a Duration.
type durationFlag struct{ d *Duration }

func (f durationFlag) String() string {
	if f.d == nil {
		return ""
	}
	return f.d.String()
}

func (f durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*f.d = Duration(d)
	return nil
}

// RegisterFlags defines the flags on fs. Their defaults, shown by -help,
// are Default's.
func RegisterFlags(fs *flag.FlagSet) *Flags {
	d := Default()
	f := &Flags{fs: fs}
	fs.StringVar(&f.ConfigFile, "config", "", "TOML configuration `file` (see basalt.toml.example)")
	fs.StringVar(&f.host, "host", d.Host, "`address` to listen on, for MySQL clients and the status port")
	fs.IntVar(&f.port, "port", d.Port, "MySQL protocol `port`")
	fs.IntVar(&f.port, "P", d.Port, "shorthand for --port")
	fs.IntVar(&f.statusPort, "status-port", d.Status.StatusPort, "HTTP status `port` (/status, /metrics, /dashboard); 0 disables")
	fs.IntVar(&f.statusPort, "status", d.Status.StatusPort, "alias of --status-port")
	fs.StringVar(&f.store, "store", d.Store, "`storage`: local (the embedded store in --data-dir), tikv (a cluster: --path lists its PD members, host:port,...) or mocktikv (client-go's in-memory mock cluster, for tests)")
	fs.StringVar(&f.dataDir, "data-dir", d.Path, "data `directory` (config key: path)")
	fs.StringVar(&f.dataDir, "path", d.Path, "alias of --data-dir; with --store tikv, the PD endpoints")
	fs.StringVar(&f.rootPassword, "initial-root-password", "", "root's `password` when a new data directory is created")
	fs.StringVar(&f.level, "log-level", d.Log.Level, "log `level`: debug, info, warn, error")
	fs.StringVar(&f.level, "L", d.Log.Level, "shorthand for --log-level")
	fs.StringVar(&f.logFile, "log-file", d.Log.File, "log `file` (default stderr)")
	fs.StringVar(&f.slowLog, "log-slow-query", d.Log.SlowQueryFile, "slow query log `file` (config key: log.slow-query-file; default basalt-slow.log in the data directory, or in the working directory with --store tikv)")
	fs.StringVar(&f.sslCert, "ssl-cert", d.Security.SSLCert, "TLS certificate `file` (PEM) for MySQL clients (config key: security.ssl-cert)")
	lease := d.Lease
	f.lease = durationFlag{&lease}
	fs.Var(f.lease, "lease", "schema `lease` with --store tikv: a SQL node that cannot renew it stops serving (config key: lease)")
	fs.StringVar(&f.sslKey, "ssl-key", d.Security.SSLKey, "TLS private key `file` (PEM) of --ssl-cert (config key: security.ssl-key)")
	return f
}

// Load builds the configuration: Default, overridden by the file named by
// --config (if given), overridden by the flags given on the command line,
// then validated. A value a flag sets is validated after the override, so
// a flag may fix a value the file gets wrong.
func (f *Flags) Load() (*Config, error) {
	cfg := Default()
	var src *source
	if f.ConfigFile != "" {
		var err error
		if cfg, src, err = readFile(f.ConfigFile); err != nil {
			return nil, err
		}
	}
	set := f.apply(cfg)
	if err := cfg.Validate(); err != nil {
		return nil, src.locate(err, set)
	}
	cfg.Warnings = src.warnings(cfg)
	return cfg, nil
}

// Apply copies onto c the flags given on the command line.
func (f *Flags) Apply(c *Config) { f.apply(c) }

// apply is Apply; it returns the config keys the flags set.
func (f *Flags) apply(c *Config) map[string]bool {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "host":
			c.Host = f.host
			set["host"] = true
		case "port", "P":
			c.Port = f.port
			set["port"] = true
		case "status-port", "status":
			c.Status.StatusPort = f.statusPort
			set["status.status-port"] = true
		case "store":
			c.Store = f.store
			set["store"] = true
		case "data-dir", "path":
			c.Path = f.dataDir
			set["path"] = true
		case "initial-root-password":
			c.InitialRootPassword = f.rootPassword
		case "log-level", "L":
			c.Log.Level = f.level
			set["log.level"] = true
		case "log-file":
			c.Log.File = f.logFile
			set["log.file"] = true
		case "log-slow-query":
			c.Log.SlowQueryFile = f.slowLog
			set["log.slow-query-file"] = true
		case "ssl-cert":
			c.Security.SSLCert = f.sslCert
			set["security.ssl-cert"] = true
		case "lease":
			c.Lease = *f.lease.d
			set["lease"] = true
		case "ssl-key":
			c.Security.SSLKey = f.sslKey
			set["security.ssl-key"] = true
		}
	})
	return set
}
