package server

import (
	"crypto/rand"
)

// Capability is a set of CLIENT_* capability flags. The server announces
// its set in the greeting, the client answers with its own, and the
// connection uses the intersection.
type Capability uint32

const (
	ClientLongPassword               Capability = 1 << 0
	ClientFoundRows                  Capability = 1 << 1
	ClientLongFlag                   Capability = 1 << 2
	ClientConnectWithDB              Capability = 1 << 3
	ClientNoSchema                   Capability = 1 << 4
	ClientCompress                   Capability = 1 << 5
	ClientODBC                       Capability = 1 << 6
	ClientLocalFiles                 Capability = 1 << 7
	ClientIgnoreSpace                Capability = 1 << 8
	ClientProtocol41                 Capability = 1 << 9
	ClientInteractive                Capability = 1 << 10
	ClientSSL                        Capability = 1 << 11
	ClientIgnoreSigpipe              Capability = 1 << 12
	ClientTransactions               Capability = 1 << 13
	ClientReserved                   Capability = 1 << 14
	ClientSecureConnection           Capability = 1 << 15
	ClientMultiStatements            Capability = 1 << 16
	ClientMultiResults               Capability = 1 << 17
	ClientPSMultiResults             Capability = 1 << 18
	ClientPluginAuth                 Capability = 1 << 19
	ClientConnectAttrs               Capability = 1 << 20
	ClientPluginAuthLenencClientData Capability = 1 << 21
	ClientCanHandleExpiredPasswords  Capability = 1 << 22
	ClientSessionTrack               Capability = 1 << 23
	ClientDeprecateEOF               Capability = 1 << 24
)

// serverCapabilities is what Basalt announces, with CLIENT_SSL too when it
// has a TLS certificate (Server.caps). Not announced: compression,
// session-state tracking, query attributes. CLIENT_LOCAL_FILES is
// announced as MySQL does, whether or not local_infile allows LOAD DATA
// LOCAL: the session refuses the statement.
const serverCapabilities = ClientLongPassword | ClientFoundRows | ClientLongFlag |
	ClientConnectWithDB | ClientNoSchema | ClientODBC | ClientLocalFiles | ClientIgnoreSpace | ClientProtocol41 |
	ClientInteractive | ClientIgnoreSigpipe | ClientTransactions | ClientReserved |
	ClientSecureConnection | ClientMultiStatements | ClientMultiResults | ClientPSMultiResults |
	ClientPluginAuth | ClientConnectAttrs | ClientPluginAuthLenencClientData |
	ClientCanHandleExpiredPasswords | ClientDeprecateEOF

// scrambleLen is the length of the nonce (auth-plugin-data) that both
// password plugins hash with the password.
const scrambleLen = 20

// newScramble returns a fresh nonce. Like MySQL's, its bytes are 7-bit and
// never NUL (the greeting NUL-terminates it) or '$'.
func newScramble() ([]byte, error) {
	s := make([]byte, scrambleLen)
	if _, err := rand.Read(s); err != nil {
		return nil, err
	}
	for i := range s {
		s[i] &= 0x7f
		if s[i] == 0 || s[i] == '$' {
			s[i]++
		}
	}
	return s, nil
}

// appendGreeting appends Protocol::HandshakeV10, the server's first packet:
//
//	1              0x0a protocol version
//	string<NUL>    server version
//	4              connection id
//	8              auth-plugin-data part 1 (scramble[0:8])
//	1              0x00 filler
//	2              capability flags, lower 16 bits
//	1              character set (default collation id)
//	2              status flags
//	2              capability flags, upper 16 bits
//	1              length of auth-plugin-data (21: scramble and its NUL)
//	10             reserved, all 0x00
//	13             auth-plugin-data part 2 (scramble[8:20] and a NUL)
//	string<NUL>    auth plugin name
func appendGreeting(b []byte, version string, connID uint32, scramble []byte, caps Capability, collation uint8, status StatusFlags, plugin string) []byte {
	b = append(b, 10)
	b = appendNulString(b, version)
	b = appendUint32(b, connID)
	b = append(b, scramble[:8]...)
	b = append(b, 0)
	b = appendUint16(b, uint16(caps&0xffff))
	b = append(b, collation)
	b = appendUint16(b, uint16(status))
	b = appendUint16(b, uint16(caps>>16))
	b = append(b, scrambleLen+1)
	b = append(b, make([]byte, 10)...)
	b = append(b, scramble[8:]...)
	b = append(b, 0)
	return appendNulString(b, plugin)
}

// handshakeResponse is the client's Protocol::HandshakeResponse41:
//
//	4              client capability flags
//	4              max packet size
//	1              collation id
//	23             filler, 0x00
//	string<NUL>    user name
//	auth response: lenenc string with CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA,
//	               else 1-byte length and data with CLIENT_SECURE_CONNECTION,
//	               else string<NUL>
//	string<NUL>    database, with CLIENT_CONNECT_WITH_DB
//	string<NUL>    client auth plugin name, with CLIENT_PLUGIN_AUTH
//	lenenc length and then key/value lenenc string pairs, with CLIENT_CONNECT_ATTRS
//
// A client that wants TLS first sends only the first 32 bytes, with
// CLIENT_SSL set (an SSLRequest): parseHandshakeResponse then returns
// errSSLRequest, and the response proper follows inside TLS (tls.go).
type handshakeResponse struct {
	caps      Capability // the client's flags, not yet intersected
	collation uint16
	user      string
	authResp  []byte
	db        string
	plugin    string
	attrs     map[string]string
}

func parseHandshakeResponse(data []byte, serverCaps Capability) (*handshakeResponse, error) {
	r := newReader(data)
	h := &handshakeResponse{}
	h.caps = Capability(r.uint32())
	switch {
	case r.bad:
		return nil, errMalformed
	case h.caps&ClientProtocol41 == 0:
		return nil, errOldClient
	}
	r.uint32() // max packet size: the client's own limit; the server's is max_allowed_packet
	h.collation = uint16(r.uint8())
	r.take(23)
	switch {
	case r.bad:
		return nil, errMalformed
	case r.remaining() == 0 && h.caps&ClientSSL != 0:
		return h, errSSLRequest
	}
	h.user = string(r.nulBytes())
	caps := h.caps & serverCaps
	switch {
	case caps&ClientPluginAuthLenencClientData != 0:
		h.authResp = r.lenencBytes()
	case caps&ClientSecureConnection != 0:
		h.authResp = r.take(int(r.uint8()))
	default:
		h.authResp = r.nulBytes()
	}
	h.authResp = append([]byte(nil), h.authResp...) // data is the read buffer
	if caps&ClientConnectWithDB != 0 && r.remaining() > 0 {
		h.db = string(r.nulBytes())
	}
	if caps&ClientPluginAuth != 0 && r.remaining() > 0 {
		h.plugin = string(r.nulBytes())
	}
	if caps&ClientConnectAttrs != 0 && r.remaining() > 0 {
		h.attrs = parseConnAttrs(&r)
	}
	if r.bad {
		return nil, errMalformed
	}
	return h, nil
}

// parseConnAttrs reads the connection attributes: an int<lenenc> total
// length, then key and value lenenc strings until it is used up.
func parseConnAttrs(r *reader) map[string]string {
	block := newReader(r.take(int(r.lenencInt())))
	attrs := make(map[string]string)
	for !block.bad && block.remaining() > 0 {
		k := block.lenencBytes()
		v := block.lenencBytes()
		if !block.bad {
			attrs[string(k)] = string(v)
		}
	}
	if block.bad {
		r.bad = true
	}
	return attrs
}

// changeUserRequest is COM_CHANGE_USER's payload after the command byte:
//
//	string<NUL>    user name
//	1-byte length and auth response, with CLIENT_SECURE_CONNECTION (else string<NUL>)
//	string<NUL>    database
//	then, if any bytes remain:
//	2              collation id
//	string<NUL>    client auth plugin name, with CLIENT_PLUGIN_AUTH
//	connection attributes as in the handshake, with CLIENT_CONNECT_ATTRS
func parseChangeUser(data []byte, caps Capability) (*handshakeResponse, error) {
	r := newReader(data)
	h := &handshakeResponse{caps: caps}
	h.user = string(r.nulBytes())
	if caps&ClientSecureConnection != 0 {
		h.authResp = r.take(int(r.uint8()))
	} else {
		h.authResp = r.nulBytes()
	}
	h.authResp = append([]byte(nil), h.authResp...)
	h.db = string(r.nulBytes())
	if r.remaining() > 0 {
		h.collation = r.uint16()
		if caps&ClientPluginAuth != 0 && r.remaining() > 0 {
			h.plugin = string(r.nulBytes())
		}
		if caps&ClientConnectAttrs != 0 && r.remaining() > 0 {
			h.attrs = parseConnAttrs(&r)
		}
	}
	if r.bad {
		return nil, errMalformed
	}
	return h, nil
}
