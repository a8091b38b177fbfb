package egress

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// The stub resolver's bounds, per Proxy.
const (
	// MaxDNSStreams bounds the stub resolver's TCP connections at once;
	// one more is closed at once.
	MaxDNSStreams = 16
	// DNSTimeout bounds the wait for each message of a TCP connection to
	// the stub resolver (its length and its bytes), the first included,
	// and the writing of each answer.
	DNSTimeout = 10 * time.Second
	// MaxDNSMessage bounds a query over TCP; a longer one closes the
	// connection.
	MaxDNSMessage = 4096
	// dnsPacket is the buffer a query over UDP is read into: the size
	// EDNS clients are told to stay within (DNS flag day 2020).
	dnsPacket = 1232
	// nameTTL is the time to live of the stub resolver's answers.
	nameTTL = 300
)

var (
	loopback4 = [4]byte{127, 0, 0, 1}
	loopback6 = [16]byte{15: 1}
)

// AnswerDNS returns the stub resolver's answer to query, a DNS message, or
// nil when query is to be dropped (shorter than a DNS header, or a
// response). The stub resolver resolves nothing itself and asks no one:
//
//   - localhost and names under it: A 127.0.0.1, AAAA ::1;
//   - a name a name grant matches at any port (as itself or under a
//     wildcard): A its address of NamesPrefix, handed out at its first
//     lookup and kept for the Proxy's life; no answer of any other type
//     (NOERROR without records), so that clients connect over IPv4; past
//     MaxNames names, SERVFAIL (reported once);
//   - any other name: NXDOMAIN, reported once per name (a Refusal of Port
//     0 whose Grant is the name's grant, ports 443 and 80; none for what
//     a grant cannot name, and none for a reverse-lookup name under
//     .arpa).
//
// A query must be a standard query (else NOTIMP) of exactly one question
// (else FORMERR) of class IN (else NOTIMP). The answer keeps the query's
// ID, question and RD bit, and is authoritative; any EDNS record of the
// query is ignored. An answer is at most 512 bytes, so it never needs to be
// truncated. AnswerDNS is safe for concurrent use.
func (p *Proxy) AnswerDNS(query []byte) []byte {
	var in dnsmessage.Parser
	h, err := in.Start(query)
	if err != nil || h.Response {
		return nil
	}
	out := dnsmessage.Header{
		ID:                 h.ID,
		Response:           true,
		OpCode:             h.OpCode,
		Authoritative:      true,
		RecursionDesired:   h.RecursionDesired,
		RecursionAvailable: true,
	}
	if h.OpCode != 0 {
		out.RCode = dnsmessage.RCodeNotImplemented
		return buildDNS(out, nil, nil)
	}
	q, err := in.Question()
	if err != nil {
		out.RCode = dnsmessage.RCodeFormatError
		return buildDNS(out, nil, nil)
	}
	if _, err := in.Question(); !errors.Is(err, dnsmessage.ErrSectionDone) {
		out.RCode = dnsmessage.RCodeFormatError
		return buildDNS(out, nil, nil)
	}
	if q.Class != dnsmessage.ClassINET {
		out.RCode = dnsmessage.RCodeNotImplemented
		return buildDNS(out, &q, nil)
	}
	name := lowerASCII(strings.TrimSuffix(q.Name.String(), "."))
	switch {
	case name == "localhost" || strings.HasSuffix(name, ".localhost"):
		switch q.Type {
		case dnsmessage.TypeA:
			return buildDNS(out, &q, &dnsmessage.AResource{A: loopback4})
		case dnsmessage.TypeAAAA:
			return buildDNS(out, &q, &dnsmessage.AAAAResource{AAAA: loopback6})
		}
		return buildDNS(out, &q, nil)
	case p.grantsName(name):
		if q.Type != dnsmessage.TypeA {
			return buildDNS(out, &q, nil)
		}
		a, ok := p.names.addr(name)
		if !ok {
			p.reportNamesFull()
			out.RCode = dnsmessage.RCodeServerFailure
			return buildDNS(out, &q, nil)
		}
		return buildDNS(out, &q, &dnsmessage.AResource{A: a.As4()})
	}
	if name != "" {
		// A grant names a host, not an address or a reverse-lookup name
		// (a grant of one would not answer its PTR query).
		grant := ""
		if checkName(name) == nil && !isNumericName(name) && name != "arpa" && !strings.HasSuffix(name, ".arpa") {
			grant = suggest(name, 443)
		}
		p.reportOnce(cut(name), 0, "it was looked up, and it is not in the server's network grant", grant)
	}
	out.RCode = dnsmessage.RCodeNameError
	return buildDNS(out, &q, nil)
}

// grantsName reports whether a name grant matches name at any port.
func (p *Proxy) grantsName(name string) bool {
	if checkName(name) != nil || isNumericName(name) {
		return false
	}
	for _, g := range p.cfg.Grants {
		if g.matchNameAnyPort(name) {
			return true
		}
	}
	return false
}

// buildDNS returns the message of header h, with the question q and the
// answer a for q's name (an A or AAAA record) when not nil; nil if it
// cannot be built.
func buildDNS(h dnsmessage.Header, q *dnsmessage.Question, a dnsmessage.ResourceBody) []byte {
	b := dnsmessage.NewBuilder(make([]byte, 0, 512), h)
	b.EnableCompression()
	if q != nil {
		if b.StartQuestions() != nil || b.Question(*q) != nil {
			return nil
		}
		if a != nil {
			rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: nameTTL}
			if b.StartAnswers() != nil {
				return nil
			}
			var err error
			switch r := a.(type) {
			case *dnsmessage.AResource:
				err = b.AResource(rh, *r)
			case *dnsmessage.AAAAResource:
				err = b.AAAAResource(rh, *r)
			}
			if err != nil {
				return nil
			}
		}
	}
	msg, err := b.Finish()
	if err != nil {
		return nil
	}
	return msg
}

// lowerASCII lowercases the ASCII letters of s, and only those: a
// non-ASCII letter does not become an ASCII one ("\u212a", the Kelvin
// sign, is not "k").
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// serveDNSPackets answers the queries that come to pc until it is closed.
func (p *Proxy) serveDNSPackets(pc net.PacketConn) {
	buf := make([]byte, dnsPacket)
	var backoff time.Duration
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			pause(&backoff)
			continue
		}
		backoff = 0
		if reply := p.AnswerDNS(buf[:n]); reply != nil {
			pc.WriteTo(reply, from)
		}
	}
}

// serveDNSStream answers the queries of the TCP connections of l, for the
// call s, until l is closed; conns counts the goroutines it starts.
func (p *Proxy) serveDNSStream(l net.Listener, s *serving, conns *sync.WaitGroup) {
	slots := make(chan struct{}, MaxDNSStreams)
	acceptLoop(l, func(c net.Conn) {
		select {
		case slots <- struct{}{}:
		default:
			c.Close()
			return
		}
		tc, ok := p.track(c, s)
		if !ok {
			<-slots
			return
		}
		conns.Add(1)
		go func() {
			defer conns.Done()
			defer func() { <-slots }()
			defer tc.Close()
			p.answerStream(tc)
		}()
	})
}

// answerStream answers the queries of c, each a message after its 2-byte
// length (RFC 1035 4.2.2), until c ends, a message takes longer than
// DNSTimeout to come or is longer than MaxDNSMessage, or one is dropped.
func (p *Proxy) answerStream(c net.Conn) {
	buf := make([]byte, 2+MaxDNSMessage)
	for {
		c.SetReadDeadline(time.Now().Add(DNSTimeout))
		if _, err := io.ReadFull(c, buf[:2]); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint16(buf))
		if n > MaxDNSMessage {
			return
		}
		if _, err := io.ReadFull(c, buf[:n]); err != nil {
			return
		}
		reply := p.AnswerDNS(buf[:n])
		if reply == nil {
			return
		}
		c.SetWriteDeadline(time.Now().Add(DNSTimeout))
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(reply))), reply...)); err != nil {
			return
		}
	}
}
