package oslo

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
)

// bodyLimit keeps the bodies of messages larger than max_message_size out
// of a listener's memory. It sits under the AMQP library, on the byte
// stream of the connection: the content header frame of each message says
// how long its body is, before any byte of the body is read. A body within
// the limit goes through untouched. A larger one is read frame by frame
// and dropped as it passes, through a scanner that keeps only its _msg_id,
// _reply_q and _unique_id; the library then receives the same delivery
// with a short body of ours instead (see oversized), so that the message is
// acknowledged like any other and the server can answer the call.
type bodyLimit struct {
	max int64
	// prefix starts every body put in place of a dropped one; its random
	// nonce tells it from anything a sender could publish.
	prefix []byte
}

func newBodyLimit(max int64) *bodyLimit {
	return &bodyLimit{max: max, prefix: []byte(`{"magnum_conductor_oversized":"` + uuidHex() + `","info":`)}
}

// oversized is what the listener kept of a message it did not read.
type oversized struct {
	Size     uint64 `json:"size"`
	MsgID    string `json:"msg_id,omitempty"`
	ReplyQ   string `json:"reply_q,omitempty"`
	UniqueID string `json:"unique_id,omitempty"`
}

// parse recognises a body put in place of a dropped one.
func (l *bodyLimit) parse(body []byte) (*oversized, bool) {
	if l == nil || !bytes.HasPrefix(body, l.prefix) {
		return nil, false
	}
	var o oversized
	if err := json.Unmarshal(bytes.TrimSuffix(body[len(l.prefix):], []byte("}")), &o); err != nil {
		return nil, false
	}
	return &o, true
}

func (l *bodyLimit) replacement(o oversized) []byte {
	info, _ := json.Marshal(o) // strings of safeIDByte only
	return append(append(append([]byte(nil), l.prefix...), info...), '}')
}

func (l *bodyLimit) wrap(c net.Conn) net.Conn {
	return &limitConn{Conn: c, lim: l, br: bufio.NewReaderSize(c, 32<<10), skip: map[uint16]*skippedBody{}}
}

// AMQP 0-9-1 frames: type, channel, payload size, payload, frame end.
const (
	frameTypeMethod = 1
	frameTypeHeader = 2
	frameTypeBody   = 3
	frameEnd        = 0xCE
	// A content header's payload: class, weight, body size, property
	// flags, then the properties.
	headerBodySizeAt = 4
	headerMinPayload = 14
	// maxHeaderPayload bounds the one frame read whole here: a content
	// header (its properties). RabbitMQ's frame_max is 128 KiB.
	maxHeaderPayload = 4 << 20
)

// limitConn is a listener's connection with bodyLimit applied to what is
// read from it.
type limitConn struct {
	net.Conn
	lim  *bodyLimit
	br   *bufio.Reader
	hdr  [7]byte
	out  []byte // ready for the library, before pass
	pass int    // bytes of the current frame to hand on unchanged
	skip map[uint16]*skippedBody
	err  error
}

// skippedBody is a message whose body is being dropped.
type skippedBody struct {
	header []byte // its content header frame, whole
	size   uint64
	left   uint64
	scan   idScanner
}

func (c *limitConn) Read(p []byte) (int, error) {
	for {
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		}
		if c.pass > 0 {
			q := p
			if len(q) > c.pass {
				q = q[:c.pass]
			}
			n, err := c.br.Read(q)
			c.pass -= n
			return n, err
		}
		if c.err != nil {
			return 0, c.err
		}
		// Any error ends the connection (the library closes it), so it
		// is kept for every later read.
		c.err = c.next()
	}
}

// next reads the next frame header and sets what to hand on.
func (c *limitConn) next() error {
	if _, err := io.ReadFull(c.br, c.hdr[:]); err != nil {
		return err
	}
	typ, ch, size := c.hdr[0], binary.BigEndian.Uint16(c.hdr[1:3]), binary.BigEndian.Uint32(c.hdr[3:7])
	sk := c.skip[ch]
	switch {
	case typ == frameTypeHeader:
		if size > maxHeaderPayload {
			return fmt.Errorf("oslo: a content header frame of %d bytes", size)
		}
		f := make([]byte, 7+int(size)+1)
		copy(f, c.hdr[:])
		if _, err := io.ReadFull(c.br, f[7:]); err != nil {
			return err
		}
		delete(c.skip, ch)
		if size >= headerMinPayload {
			if n := binary.BigEndian.Uint64(f[7+headerBodySizeAt:]); n > uint64(c.lim.max) {
				c.skip[ch] = &skippedBody{header: f, size: n, left: n}
				return nil
			}
		}
		c.out = f
	case typ == frameTypeBody && sk != nil:
		if err := c.drop(sk, int(size)); err != nil {
			return err
		}
		sk.left -= min(sk.left, uint64(size))
		if sk.left > 0 {
			return nil
		}
		delete(c.skip, ch)
		c.out = c.replace(sk, ch)
	default:
		if typ == frameTypeMethod {
			delete(c.skip, ch) // a method ends any content (the library drops it too)
		}
		c.out = c.hdr[:]
		c.pass = int(size) + 1
	}
	return nil
}

// drop reads one body frame's payload of sk through its scanner.
func (c *limitConn) drop(sk *skippedBody, n int) error {
	for n > 0 {
		chunk, err := c.br.Peek(min(n, c.br.Size()))
		sk.scan.scan(chunk)
		_, _ = c.br.Discard(len(chunk))
		n -= len(chunk)
		if err != nil && n > 0 {
			return err
		}
	}
	end, err := c.br.ReadByte()
	if err != nil {
		return err
	}
	if end != frameEnd {
		return errors.New("oslo: malformed body frame from the broker")
	}
	return nil
}

// replace is the content header of sk with the length of the body put in
// its place, and that body in one body frame.
func (c *limitConn) replace(sk *skippedBody, ch uint16) []byte {
	msgID, replyQ, uniqueID := sk.scan.ids()
	body := c.lim.replacement(oversized{Size: sk.size, MsgID: msgID, ReplyQ: replyQ, UniqueID: uniqueID})
	binary.BigEndian.PutUint64(sk.header[7+headerBodySizeAt:], uint64(len(body)))
	out := append(sk.header, frameTypeBody, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint16(out[len(sk.header)+1:], ch)
	binary.BigEndian.PutUint32(out[len(sk.header)+3:], uint32(len(body)))
	out = append(out, body...)
	return append(out, frameEnd)
}

// idScanner picks _msg_id, _reply_q and _unique_id out of a message body
// as it streams past, keeping nothing else: the top-level members of the
// body itself (a message without envelope), and of the JSON text in its
// "oslo.message" string (oslo's envelope).
type idScanner struct {
	outer, inner jsonMembers
}

// scan reads p. Runs of string content that no kept value needs (the
// arguments, nearly all of a large body) are skipped a run at a time rather
// than byte by byte.
func (s *idScanner) scan(p []byte) {
	for len(p) > 0 {
		if run := s.outer.plainRun(p); run > 0 {
			if s.outer.capture == memberMessage {
				s.inner.feedPlain(p[:run])
			}
			p = p[run:]
			continue
		}
		s.outer.feed(p[0], &s.inner)
		p = p[1:]
	}
}

// plainRun is how many bytes at the start of p are string content that
// only needs skipping (or, for oslo.message, forwarding as it is): none of
// them a quote or a backslash.
func (m *jsonMembers) plainRun(p []byte) int {
	if !m.inStr || m.esc != 0 || m.inKey || (m.capture >= memberMsgID && m.capture <= memberUniqueID) {
		return 0
	}
	if i := bytes.IndexAny(p, "\\\""); i >= 0 {
		return i
	}
	return len(p)
}

// feedPlain reads string content of the outer message that holds no quote
// or backslash (so no escape, and nothing that ends a string of this one).
func (m *jsonMembers) feedPlain(p []byte) {
	for len(p) > 0 {
		if run := m.plainRun(p); run > 0 {
			p = p[run:]
			continue
		}
		m.feed(p[0], nil)
		p = p[1:]
	}
}

// ids returns what was found: the envelope's message's members when the
// body is an envelope (both oslo.version and an oslo.message string), the
// body's own otherwise, as DecodeRequest reads them.
func (s *idScanner) ids() (msgID, replyQ, uniqueID string) {
	m := &s.outer
	if s.outer.sawVersion && s.outer.sawMessage {
		m = &s.inner
	}
	return m.got[memberMsgID], m.got[memberReplyQ], m.got[memberUniqueID]
}

// The members jsonMembers keeps.
const (
	memberNone = iota
	memberMsgID
	memberReplyQ
	memberUniqueID
	memberMessage // oslo.message: its string is forwarded, unescaped
	memberVersion // oslo.version: only noted
)

var memberNames = [...]string{"_msg_id", "_reply_q", "_unique_id", "oslo.message", "oslo.version"}

// maxID bounds a kept value: a queue name (an AMQP short string) or an id.
const maxID = 255

// jsonMembers is a byte-at-a-time scanner of one JSON object that keeps the
// string values of the members named in memberNames at its top level (the
// last one of a name wins, as in DecodeRequest). It needs no valid JSON:
// whatever it is fed, it keeps at most a few short strings.
type jsonMembers struct {
	depth     int
	inStr     bool
	esc       int // 0; 1 after a backslash; 2 to 5 reading \u's hex digits
	u         rune
	expectKey bool // the next string at the top level names a member
	inKey     bool
	key       []byte
	keyLong   bool
	member    int // the member whose value comes next
	capture   int // the member whose string value is being read
	val       []byte
	valBad    bool

	got        [memberUniqueID + 1]string
	sawVersion bool
	sawMessage bool
}

func (m *jsonMembers) feed(b byte, fwd *jsonMembers) {
	if m.inStr {
		m.feedString(b, fwd)
		return
	}
	if m.depth == 1 && m.member != memberNone && b != ':' && b != ' ' && b != '\t' && b != '\n' && b != '\r' {
		// A member's value starts here.
		idx := m.member
		m.member = memberNone
		if b == '"' {
			m.inStr, m.capture, m.val, m.valBad = true, idx, m.val[:0], false
			if idx == memberVersion {
				m.sawVersion = true
			}
			return
		}
		switch idx {
		case memberMsgID, memberReplyQ, memberUniqueID:
			m.got[idx] = "" // not a string: as good as absent
		case memberVersion:
			m.sawVersion = true
		case memberMessage:
			m.sawMessage = false
		}
	}
	switch b {
	case '{':
		m.depth++
		if m.depth == 1 {
			m.expectKey = true
		}
	case '[':
		m.depth++
	case '}', ']':
		m.depth--
	case ',':
		if m.depth == 1 {
			m.expectKey = true
		}
	case '"':
		m.inStr = true
		if m.depth == 1 && m.expectKey {
			m.inKey, m.key, m.keyLong, m.expectKey = true, m.key[:0], false, false
		} else {
			m.capture = memberNone
		}
	}
}

func (m *jsonMembers) feedString(b byte, fwd *jsonMembers) {
	switch {
	case m.esc == 1:
		m.esc = 0
		switch b {
		case 'u':
			m.esc, m.u = 2, 0
			return
		case 'n':
			b = '\n'
		case 't':
			b = '\t'
		case 'r':
			b = '\r'
		case 'b':
			b = '\b'
		case 'f':
			b = '\f'
		}
		m.char(b, fwd)
	case m.esc >= 2:
		m.u = m.u<<4 | hexValue(b)
		if m.esc++; m.esc == 6 {
			m.esc = 0
			if m.u < 0x80 {
				m.char(byte(m.u), fwd)
			} else {
				m.char(0x80, fwd) // not ASCII: never structural, never part of a kept value
			}
		}
	case b == '\\':
		m.esc = 1
	case b == '"':
		m.endString()
	default:
		m.char(b, fwd)
	}
}

func (m *jsonMembers) char(b byte, fwd *jsonMembers) {
	switch {
	case m.inKey:
		if len(m.key) < 16 {
			m.key = append(m.key, b)
		} else {
			m.keyLong = true // too long for any name kept
		}
	case m.capture == memberMessage:
		if fwd != nil {
			fwd.feed(b, nil)
		}
	case m.capture >= memberMsgID && m.capture <= memberUniqueID:
		if len(m.val) < maxID && safeIDByte(b) {
			m.val = append(m.val, b)
		} else {
			m.valBad = true
		}
	}
}

func (m *jsonMembers) endString() {
	m.inStr = false
	if m.inKey {
		m.inKey, m.member = false, memberNone
		for i, n := range memberNames {
			if !m.keyLong && string(m.key) == n {
				m.member = i + 1
			}
		}
		return
	}
	switch m.capture {
	case memberMsgID, memberReplyQ, memberUniqueID:
		m.got[m.capture] = ""
		if !m.valBad {
			m.got[m.capture] = string(m.val)
		}
	case memberMessage:
		m.sawMessage = true
	}
	m.capture = memberNone
}

func hexValue(b byte) rune {
	switch {
	case b >= '0' && b <= '9':
		return rune(b - '0')
	case b >= 'a' && b <= 'f':
		return rune(b-'a') + 10
	case b >= 'A' && b <= 'F':
		return rune(b-'A') + 10
	}
	return 0
}

// safeIDByte is a byte of the ids and queue names kept: those of oslo
// ("reply_" and hex, or a queue manager's "<host>:<process>:<n>"), never
// anything that would need escaping.
func safeIDByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' ||
		b == '_' || b == '-' || b == '.' || b == ':' || b == '@'
}
