package oslolog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"log/syslog"
	"net"
	"strconv"
	"strings"
	"syscall"
)

const journalSocket = "/run/systemd/journal/socket"

// maxJournalMessage bounds MESSAGE when a datagram is refused as too large
// (the journal's memfd protocol for huge entries is not used).
const maxJournalMessage = 32 << 10

// journal sends entries with the journal's native protocol, as oslo.log's
// OSJournalHandler does: MESSAGE, PRIORITY, SYSLOG_IDENTIFIER,
// SYSLOG_FACILITY, LOGGER_LEVEL and, when known, REQUEST_ID and
// GLOBAL_REQUEST_ID, which journalctl can filter on.
type journal struct {
	conn       *net.UnixConn
	identifier string
	facility   syslog.Priority
}

func dialJournal(path, identifier string, facility syslog.Priority) (*journal, error) {
	if path == "" {
		path = journalSocket
	}
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return nil, fmt.Errorf("use_journal: %w", err)
	}
	return &journal{conn: conn, identifier: identifier, facility: facility}, nil
}

func (j *journal) writeEntry(e entry) error {
	_, err := j.conn.Write(j.datagram(e, e.message))
	if errors.Is(err, syscall.EMSGSIZE) && len(e.message) > maxJournalMessage {
		msg := append(e.message[:maxJournalMessage:maxJournalMessage], " [truncated]"...)
		_, err = j.conn.Write(j.datagram(e, msg))
	}
	return err
}

func (j *journal) datagram(e entry, message []byte) []byte {
	b := make([]byte, 0, len(message)+256)
	b = journalField(b, "MESSAGE", string(message))
	b = journalField(b, "PRIORITY", strconv.Itoa(int(severity(e.level))))
	b = journalField(b, "SYSLOG_FACILITY", strconv.Itoa(int(j.facility>>3)))
	if j.identifier != "" {
		b = journalField(b, "SYSLOG_IDENTIFIER", j.identifier)
	}
	b = journalField(b, "LOGGER_LEVEL", levelName(e.level))
	if e.requestID != "" {
		b = journalField(b, "REQUEST_ID", e.requestID)
	}
	if e.globalRequestID != "" {
		b = journalField(b, "GLOBAL_REQUEST_ID", e.globalRequestID)
	}
	return b
}

// journalField appends NAME=value, or the binary form when value holds a
// newline.
func journalField(b []byte, name, value string) []byte {
	if !strings.ContainsRune(value, '\n') {
		b = append(b, name...)
		b = append(b, '=')
		b = append(b, value...)
		return append(b, '\n')
	}
	b = append(b, name...)
	b = append(b, '\n')
	b = binary.LittleEndian.AppendUint64(b, uint64(len(value)))
	b = append(b, value...)
	return append(b, '\n')
}

// levelName is Python's name of a level.
func levelName(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "ERROR"
	case l >= slog.LevelWarn:
		return "WARNING"
	case l >= slog.LevelInfo:
		return "INFO"
	}
	return "DEBUG"
}

func (j *journal) Close() error { return j.conn.Close() }
