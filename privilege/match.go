package privilege

import (
	"net"
	"strings"
)

// Patterns. An account's host and a database grant's name are LIKE-style
// patterns: '%' matches any run of characters, '_' one character, and '\'
// makes the next character literal. Host names match case-insensitively.
// The host pattern 'localhost' matches clients on a Unix socket (host
// "localhost") and, as MariaDB does once it has resolved the address, TCP
// clients from a loopback address. Empty matches any host, as '%'.

// MatchHost reports whether client host (an IP address, or "localhost"
// over a Unix socket) matches the pattern of an account or grant.
func MatchHost(pattern, host string) bool {
	if pattern == "" || pattern == "%" {
		return true
	}
	if strings.EqualFold(pattern, "localhost") {
		if strings.EqualFold(host, "localhost") {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return wildMatch(strings.ToLower(pattern), strings.ToLower(host))
}

// MatchDB reports whether database name db matches a grant's pattern.
// Database names are case-insensitive in Basalt (lower_case_table_names=2).
func MatchDB(pattern, db string) bool {
	return wildMatch(strings.ToLower(pattern), strings.ToLower(db))
}

// HasWildcard reports whether pattern has an unescaped '%' or '_'.
func HasWildcard(pattern string) bool {
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '%', '_':
			return true
		}
	}
	return false
}

// wildMatch matches s against pattern with '%', '_' and '\' escapes.
func wildMatch(pattern, s string) bool {
	// Iterative matching with backtracking to the last '%'.
	p, i := 0, 0
	starP, starI := -1, 0
	for i < len(s) {
		if p < len(pattern) {
			c := pattern[p]
			switch {
			case c == '%':
				starP, starI = p, i
				p++
				continue
			case c == '_':
				p++
				i++
				continue
			case c == '\\' && p+1 < len(pattern):
				if pattern[p+1] == s[i] {
					p += 2
					i++
					continue
				}
			case c == s[i]:
				p++
				i++
				continue
			}
		}
		if starP < 0 {
			return false
		}
		starI++
		p, i = starP+1, starI
	}
	for p < len(pattern) && pattern[p] == '%' {
		p++
	}
	return p == len(pattern)
}

// sortValue is MySQL's get_sort() of one pattern: a name without wildcards
// sorts before any pattern, longer names first; a pattern sorts by how many
// characters come before its first wildcard, so '%' comes last.
func sortValue(pattern string) int {
	n := 0
	for i := 0; i < len(pattern); i++ {
		switch pattern[i] {
		case '\\':
			i++
		case '%', '_':
			return min(i+1, 127)
		}
		n++
	}
	if pattern == "" {
		return 1 // '' is any host, like '%'
	}
	return 128 + n
}

// moreSpecific compares the sort values of two records, pattern by
// pattern: the record whose first differing value is higher matches first.
func moreSpecific(a, b []int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}
