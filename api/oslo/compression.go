package oslo

import (
	"bytes"
	"compress/bzip2"
	"compress/zlib"
	"fmt"
	"io"

	amqp "github.com/rabbitmq/amqp091-go"
)

// maxDecompressed bounds what one compressed reply may expand to (the
// server bounds requests by max_message_size).
const maxDecompressed = 64 << 20

// compressionOf is the kombu "compression" header of a delivery: set by a
// peer with [oslo_messaging_rabbit] kombu_compression, "" otherwise.
func compressionOf(h amqp.Table) string {
	c, _ := h["compression"].(string)
	return c
}

// compress is kombu's gzip compression of a body sent with
// kombu_compression = gzip: zlib data (Python's zlib.compress), at zlib's
// default level as there.
func compress(body []byte) ([]byte, error) {
	var b bytes.Buffer
	b.Grow(len(body)/2 + 64)
	w := zlib.NewWriter(&b)
	if _, err := w.Write(body); err != nil {
		return nil, fmt.Errorf("compressing a message: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("compressing a message: %w", err)
	}
	return b.Bytes(), nil
}

// decompress undoes kombu's compression of a message body: zlib data under
// "application/x-gzip" (kombu_compression = gzip or zlib), bzip2 under
// "application/x-bz2" (bzip2). We read both, and write the first when
// kombu_compression asks for it. A body that expands past limit bytes is
// refused before more is read.
func decompress(body []byte, compression string, limit int64) ([]byte, error) {
	var r io.Reader
	switch compression {
	case "":
		return body, nil
	case compressionZlib:
		zr, err := zlib.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("compressed body (%s): %w", compression, err)
		}
		defer zr.Close()
		r = zr
	case compressionBzip2:
		r = bzip2.NewReader(bytes.NewReader(body))
	default:
		return nil, fmt.Errorf("unsupported compression %q (kombu_compression gzip, zlib and bzip2 are read)", compression)
	}
	out, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, fmt.Errorf("compressed body (%s): %w", compression, err)
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("compressed body (%s) expands past %d bytes", compression, limit)
	}
	return out, nil
}
