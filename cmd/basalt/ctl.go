package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"
)

// ctlMain is basalt ctl: the cluster as tables, read from PD's HTTP API
// (pd-ctl's first commands), and a load of timestamps (ctl_bench.go).
//
//	basalt ctl [--pd URL] store|region|member
//	basalt ctl [--pd URL] tso-bench [--clients N] [--duration D] [--rpc-concurrency N] [--batch-interval D]
func ctlMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("basalt ctl", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pdURL := fs.String("pd", "http://127.0.0.1:2379", "a PD member's client URL")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: basalt ctl [--pd URL] store|region|member\n       basalt ctl [--pd URL] tso-bench [--clients N] [--duration D] [--rpc-concurrency N] [--batch-interval D]\n\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if fs.NArg() >= 1 && fs.Arg(0) == "tso-bench" {
		return ctlTSOBench(*pdURL, fs.Args()[1:], stdout, stderr)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	base := strings.TrimSuffix(*pdURL, "/") + "/pd/api/v1/"
	var err error
	switch fs.Arg(0) {
	case "store", "stores":
		err = printStores(stdout, base)
	case "region", "regions":
		err = printRegions(stdout, base)
	case "member", "members":
		err = printMembers(stdout, base)
	default:
		fmt.Fprintf(stderr, "basalt ctl: unknown command %q (store, region, member)\n", fs.Arg(0))
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "basalt ctl: %v\n", err)
		return 1
	}
	return 0
}

func getJSON(url string, v any) error {
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func printStores(w io.Writer, base string) error {
	var r struct {
		Stores []struct {
			Store struct {
				ID      uint64 `json:"id"`
				Address string `json:"address"`
			} `json:"store"`
			Status struct {
				StateName       string    `json:"state_name"`
				LastHeartbeatTS time.Time `json:"last_heartbeat_ts"`
				RegionCount     int       `json:"region_count"`
				LeaderCount     int       `json:"leader_count"`
			} `json:"status"`
		} `json:"stores"`
	}
	if err := getJSON(base+"stores", &r); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tADDRESS\tSTATE\tREGIONS\tLEADERS\tLAST HEARTBEAT")
	for _, s := range r.Stores {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", s.Store.ID, s.Store.Address, s.Status.StateName,
			s.Status.RegionCount, s.Status.LeaderCount, s.Status.LastHeartbeatTS.Format(time.RFC3339))
	}
	return tw.Flush()
}

func printRegions(w io.Writer, base string) error {
	var r struct {
		Regions []struct {
			ID       uint64 `json:"id"`
			StartKey string `json:"start_key"`
			EndKey   string `json:"end_key"`
			Peers    []struct {
				StoreID uint64 `json:"store_id"`
			} `json:"peers"`
			Leader *struct {
				StoreID uint64 `json:"store_id"`
			} `json:"leader"`
			Size uint64 `json:"approximate_size"`
		} `json:"regions"`
	}
	if err := getJSON(base+"regions", &r); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTART KEY\tEND KEY\tSTORES\tLEADER STORE\tSIZE (bytes)")
	for _, g := range r.Regions {
		var stores []string
		for _, p := range g.Peers {
			stores = append(stores, fmt.Sprint(p.StoreID))
		}
		leader := "-"
		if g.Leader != nil {
			leader = fmt.Sprint(g.Leader.StoreID)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\n", g.ID, keyText(g.StartKey), keyText(g.EndKey),
			strings.Join(stores, ","), leader, g.Size)
	}
	return tw.Flush()
}

func keyText(hexKey string) string {
	if hexKey == "" {
		return "-"
	}
	return hexKey
}

func printMembers(w io.Writer, base string) error {
	var r struct {
		Members []struct {
			Name       string   `json:"name"`
			MemberID   uint64   `json:"member_id"`
			ClientURLs []string `json:"client_urls"`
			PeerURLs   []string `json:"peer_urls"`
		} `json:"members"`
		Leader struct {
			MemberID uint64 `json:"member_id"`
		} `json:"leader"`
	}
	if err := getJSON(base+"members", &r); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMEMBER ID\tCLIENT URLS\tPEER URLS\tLEADER")
	for _, m := range r.Members {
		leader := ""
		if m.MemberID == r.Leader.MemberID {
			leader = "yes"
		}
		fmt.Fprintf(tw, "%s\t%x\t%s\t%s\t%s\n", m.Name, m.MemberID, strings.Join(m.ClientURLs, ","),
			strings.Join(m.PeerURLs, ","), leader)
	}
	return tw.Flush()
}
