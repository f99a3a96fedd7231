package oslo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/openstack/magnum-conductor/api/exception"
	"github.com/openstack/magnum-conductor/api/pyjson"
)

// Envelope keys and version (oslo_messaging._drivers.common).
const (
	envelopeVersionKey = "oslo.version"
	envelopeMessageKey = "oslo.message"
	envelopeVersion    = "2.0"
)

// Request is one decoded RPC request (call or cast).
type Request struct {
	Method    json.RawMessage // the raw "method" value (normally a JSON string)
	Args      json.RawMessage // the raw "args" value; nil when absent
	Version   json.RawMessage // nil when absent ("1.0")
	Namespace json.RawMessage // nil when absent
	MsgID     string          // "_msg_id": set for calls
	// BadMsgID is set when "_msg_id" is there but neither a string nor
	// null: a malformed call, which no reply can reach.
	BadMsgID bool
	ReplyQ   string         // "_reply_q"
	Timeout  float64        // "_timeout" (call monitor), 0 when null
	UniqueID string         // "_unique_id"
	Context  map[string]any // "_context_*" keys without the prefix
	// Other holds any further keys, unchanged.
	Other map[string]json.RawMessage
}

// MethodName returns the method as a string and whether it is one.
func (r *Request) MethodName() (string, bool) {
	if m := r.Method; len(m) >= 2 && m[0] == '"' && m[len(m)-1] == '"' &&
		bytes.IndexByte(m[1:len(m)-1], '\\') < 0 && bytes.IndexByte(m[1:len(m)-1], '"') < 0 && utf8.Valid(m) {
		return string(m[1 : len(m)-1]), true
	}
	var s string
	if len(r.Method) == 0 || json.Unmarshal(r.Method, &s) != nil {
		return "", false
	}
	return s, true
}

// DecodeError is a message that cannot be served. When the inner message
// could be read far enough, Request holds its _msg_id and _reply_q so that a
// failure can still be sent back.
type DecodeError struct {
	Reason  string
	Failure *exception.Error // what to reply, when a reply is possible
	Request *Request
}

func (e *DecodeError) Error() string { return "undecodable RPC message: " + e.Reason }

// unwrapEnvelope returns the inner message of body: the decoded
// "oslo.message" of an envelope, or body itself when it has no envelope
// (oslo's deserialize_msg).
func unwrapEnvelope(body []byte) (map[string]json.RawMessage, error) {
	if inner, ok := fastEnvelopeMessage(body); ok {
		if msg, ok := splitObject(inner); ok {
			return msg, nil
		}
		// Let the generic path produce the precise error.
	}
	var env struct {
		Version *json.RawMessage `json:"oslo.version"`
		Message *string          `json:"oslo.message"`
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &env); err != nil || env.Version == nil || env.Message == nil {
		// Not an envelope (or a malformed one): the body is the message.
		var outer map[string]json.RawMessage
		if err := json.Unmarshal(body, &outer); err != nil || outer == nil {
			return nil, &DecodeError{Reason: fmt.Sprintf("body is not a JSON object: %v", err)}
		}
		if _, hasV := outer[envelopeVersionKey]; hasV {
			if _, hasM := outer[envelopeMessageKey]; hasM {
				return nil, &DecodeError{Reason: "oslo.message is not a string"}
			}
		}
		return outer, nil
	}
	vraw := *env.Version
	if err := json.Unmarshal([]byte(*env.Message), &msg); err != nil || msg == nil {
		return nil, &DecodeError{Reason: fmt.Sprintf("oslo.message is not a JSON object: %v", err)}
	}
	var version string
	_ = json.Unmarshal(vraw, &version)
	major, _, _ := strings.Cut(version, ".")
	if major != "2" {
		return msg, &DecodeError{
			Reason: fmt.Sprintf("envelope version %q not supported", version),
			Failure: &exception.Error{
				Module: "oslo_messaging._drivers.common", Class: "UnsupportedRpcEnvelopeVersion", Code: 500,
				Message: fmt.Sprintf("Specified RPC envelope version, %s, not supported by this endpoint.", version),
			},
		}
	}
	return msg, nil
}

// DecodeRequest decodes an AMQP body into a Request.
func DecodeRequest(body []byte) (*Request, error) {
	// Fast path: the envelope exactly as oslo.messaging writes it, read
	// member by member into the Request without an intermediate map.
	if inner, ok := fastEnvelopeMessage(body); ok {
		req := &Request{Context: make(map[string]any, 32)}
		if forEachMember(inner, req.setKey) {
			return req, nil
		}
	}
	msg, err := unwrapEnvelope(body)
	if msg == nil {
		return nil, err
	}
	req := &Request{Context: make(map[string]any, 32)}
	if err != nil {
		// Only what a failure reply needs.
		for _, k := range []string{"_msg_id", "_reply_q", "_unique_id", "_timeout"} {
			if v, ok := msg[k]; ok {
				req.set(k, v)
			}
		}
		var de *DecodeError
		if ok := asDecodeError(err, &de); ok {
			de.Request = req
		}
		return nil, err
	}
	for k, v := range msg {
		req.set(k, v)
	}
	return req, nil
}

// setKey is set for a key still in the message's bytes: the names of the
// members oslo sends, context keys included, are not allocated again.
func (req *Request) setKey(k []byte, v json.RawMessage) {
	if name, ok := bytes.CutPrefix(k, []byte(contextPrefix)); ok {
		key, known := contextKeyNames[string(name)]
		if !known {
			key = string(name)
		}
		if val, ok := validJSONValue(v); ok {
			req.Context[key] = val
		}
		return
	}
	switch string(k) {
	case "method", "args", "version", "namespace", "_msg_id", "_reply_q", "_unique_id", "_timeout":
		req.set(wireKeys[string(k)], v)
	default:
		req.set(string(k), v)
	}
}

const contextPrefix = "_context_"

// wireKeys interns the members of a request that are not context keys.
var wireKeys = map[string]string{"method": "method", "args": "args", "version": "version", "namespace": "namespace",
	"_msg_id": "_msg_id", "_reply_q": "_reply_q", "_unique_id": "_unique_id", "_timeout": "_timeout"}

// set stores one member of the inner message.
func (req *Request) set(k string, v json.RawMessage) {
	str := func() string {
		if s, ok := validJSONValue(v); ok {
			if s, ok := s.(string); ok {
				return s
			}
		}
		return ""
	}
	switch {
	case k == "method":
		req.Method = v
	case k == "args":
		req.Args = v
	case k == "version":
		if !isNull(v) {
			req.Version = v
		}
	case k == "namespace":
		if !isNull(v) {
			req.Namespace = v
		}
	case k == "_msg_id":
		req.MsgID = str()
		req.BadMsgID = req.MsgID == "" && !isNull(v) && !bytes.Equal(bytes.TrimSpace(v), []byte(`""`))
	case k == "_reply_q":
		req.ReplyQ = str()
	case k == "_unique_id":
		req.UniqueID = str()
	case k == "_timeout":
		var f float64
		if json.Unmarshal(v, &f) == nil {
			req.Timeout = f
		}
	case strings.HasPrefix(k, contextPrefix):
		if val, ok := validJSONValue(v); ok {
			req.Context[strings.TrimPrefix(k, contextPrefix)] = val
		}
	default:
		if req.Other == nil {
			req.Other = map[string]json.RawMessage{}
		}
		req.Other[k] = v
	}
}

func asDecodeError(err error, target **DecodeError) bool {
	return errors.As(err, target)
}

func isNull(raw json.RawMessage) bool {
	return len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null"
}

// wrapEnvelope returns the 2.0 envelope body around the inner message.
func wrapEnvelope(inner []byte) ([]byte, error) {
	out := make([]byte, 0, len(inner)+len(inner)/4+48)
	out = append(out, `{"oslo.version": "2.0", "oslo.message": `...)
	// inner is not touched while it is read: no copy of a list-sized reply.
	out = pyjson.AppendString(out, unsafe.String(unsafe.SliceData(inner), len(inner)))
	return append(out, '}'), nil
}

// replyMessage is the inner reply (amqpdriver._send_reply).
type replyMessage struct {
	Result   json.RawMessage `json:"result"`
	Failure  *string         `json:"failure"`
	Ending   bool            `json:"ending"`
	MsgID    string          `json:"_msg_id"`
	UniqueID string          `json:"_unique_id"`
	// Err says why the reply is malformed (a member of the wrong type);
	// the call it answers fails with it at once.
	Err error `json:"-"`
}

// encodeReply builds the enveloped body of a reply; result is any value
// pyjson.Append takes (a pyjson.Raw or *pyjson.Buffer is copied as it is).
// The inner message is escaped straight into the envelope: a list-sized
// result is copied once, not laid out first and escaped afterwards; a
// *pyjson.Buffer already escaped (Escaped) is copied without a second look.
func encodeReply(msgID string, result any, failure *string, ending bool) ([]byte, error) {
	return appendReply(nil, msgID, result, failure, ending)
}

// appendReply is encodeReply writing into dst.
func appendReply(dst []byte, msgID string, result any, failure *string, ending bool) ([]byte, error) {
	var res []byte
	escaped := false // res is already escaped as the envelope's string body
	switch x := result.(type) {
	case pyjson.Raw:
		res = x
	case *pyjson.Buffer:
		if x != nil {
			res, escaped = x.B, x.Escaped
		}
	default:
		var err error
		if res, err = pyjson.Append(nil, result); err != nil {
			return nil, fmt.Errorf("encoding %q: %w", "result", err)
		}
	}
	if len(res) == 0 {
		res = pyjson.Raw("null")
	}
	// The members after result, as orderedObject lays them out.
	rest := orderedObject{buf: make([]byte, 0, 160), count: 1}
	if failure != nil {
		rest.add("failure", *failure)
	} else {
		rest.add("failure", nil)
	}
	rest.add("ending", ending)
	rest.add("_msg_id", msgID)
	rest.add("_unique_id", uuidHex())
	if rest.err != nil {
		return nil, rest.err
	}
	const head = `{"result": `
	out := slices.Grow(dst[:0], len(envelopePrefix)+len(head)+len(res)+len(res)/4+2*len(rest.buf)+8)
	out = append(out, envelopePrefix...)
	out = pyjson.AppendStringBody(out, head)
	if escaped {
		out = append(out, res...)
	} else {
		out = pyjson.AppendStringBody(out, unsafe.String(unsafe.SliceData(res), len(res)))
	}
	out = pyjson.AppendStringBody(out, unsafe.String(unsafe.SliceData(rest.buf), len(rest.buf)))
	return append(out, `}"}`...), nil
}

// orderedObject appends key/value pairs to a JSON object in order, laid
// out as Python's json.dumps does. Its error is sticky: the first value
// that cannot be encoded stops every later add, and bytes returns it, so
// a caller checks once, at the end, and cannot forget.
type orderedObject struct {
	buf   []byte
	count int
	err   error
}

func (o *orderedObject) add(key string, value any) {
	o.addPrefixed("", key, value)
}

// addPrefixed adds prefix+key without building the concatenated key.
func (o *orderedObject) addPrefixed(prefix, key string, value any) {
	if o.err != nil {
		return
	}
	mark := len(o.buf)
	if o.buf == nil {
		o.buf = make([]byte, 0, 2048)
	}
	if o.count == 0 {
		o.buf = append(o.buf, '{')
	} else {
		o.buf = append(o.buf, ", "...)
	}
	o.buf = append(o.buf, '"')
	o.buf = pyjson.AppendStringBody(o.buf, prefix)
	o.buf = pyjson.AppendStringBody(o.buf, key)
	o.buf = append(o.buf, '"', ':', ' ')
	var err error
	if o.buf, err = pyjson.Append(o.buf, value); err != nil {
		o.buf = o.buf[:mark]
		o.err = fmt.Errorf("encoding %q: %w", prefix+key, err)
		return
	}
	o.count++
}

// bytes is the object, or the first error of an add.
func (o *orderedObject) bytes() ([]byte, error) {
	if o.err != nil {
		return nil, o.err
	}
	if o.count == 0 {
		return []byte("{}"), nil
	}
	return append(o.buf, '}'), nil
}
