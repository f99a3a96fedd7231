package pyjson

import "sync"

// Buffer is a value laid out as Python writes it, like Raw, in a byte
// buffer that is used again: the code that copies it into a message calls
// Release once the bytes are copied, and nothing reads it afterwards. A
// Buffer that is never released is collected as any other value; releasing
// is what spares the garbage collector a list-sized allocation per reply.
type Buffer struct {
	B []byte
	// Escaped says B holds the value's JSON text escaped as the body of a
	// JSON string (what AppendStringBody makes of it), ready to be copied
	// into oslo's envelope, which carries the message as a string.
	// Append and MarshalJSON write the JSON text it holds.
	Escaped bool
}

// maxPooled is the largest buffer kept for reuse, so that one huge reply
// does not stay resident for the life of the process.
const maxPooled = 4 << 20

// buffers holds released Buffers. Like encoding/json's encoder pool, it is a
// cache with no behaviour of its own: a Get after a Put may return a new
// Buffer.
var buffers = sync.Pool{New: func() any { return new(Buffer) }}

// GetBuffer returns an empty Buffer, with the capacity of an earlier reply
// when one was released.
func GetBuffer() *Buffer {
	b := buffers.Get().(*Buffer)
	b.B, b.Escaped = b.B[:0], false
	return b
}

// Release gives b back; b must not be used after it.
func (b *Buffer) Release() {
	if b == nil || cap(b.B) > maxPooled {
		return
	}
	b.B = b.B[:0]
	buffers.Put(b)
}

// MarshalJSON lets encoding/json embed a Buffer as the JSON it holds.
func (b *Buffer) MarshalJSON() ([]byte, error) {
	if b == nil || len(b.B) == 0 {
		return []byte("null"), nil
	}
	if b.Escaped {
		return appendUnescaped(nil, b.B)
	}
	return b.B, nil
}

// Release gives v back when it is a *Buffer, and does nothing otherwise:
// for code that writes a result of any type and then lets it go.
func Release(v any) {
	if b, ok := v.(*Buffer); ok {
		b.Release()
	}
}
