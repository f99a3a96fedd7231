package oslo

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/openstack/magnum-conductor/internal/pyurl"
)

// TransportHost is one broker of a transport URL.
type TransportHost struct {
	Hostname string
	Port     int // 0: the default, 5672
	Username string
	Password string
}

// Addr returns host:port with IPv6 brackets and the default port.
func (h TransportHost) Addr() string {
	port := h.Port
	if port == 0 {
		port = 5672
	}
	host := h.Hostname
	if host == "" {
		host = "localhost"
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// TransportURL is oslo.messaging's TransportURL:
// transport://user:pass@host:port[,userN:passN@hostN:portN]/virtual_host?query
type TransportURL struct {
	Transport   string
	Hosts       []TransportHost
	VirtualHost string // "" means "/"
	Query       map[string]string
}

// ParseTransportURL parses a transport URL as oslo.messaging's
// TransportURL.parse does: hosts split on ",", credentials percent-decoded,
// "[v6]:port" hosts, the virtual host percent-decoded from the path, and
// repeated query keys joined with ",".
func ParseTransportURL(raw string) (*TransportURL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || scheme == "" {
		return nil, fmt.Errorf("invalid transport URL %s: no scheme specified", redactURL(raw))
	}
	u := &TransportURL{Transport: scheme, Query: map[string]string{}}
	netloc, path := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		netloc, path = rest[:i], rest[i:]
	}
	if i := strings.IndexByte(path, '#'); i >= 0 {
		path = path[:i]
	}
	query := ""
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path, query = path[:i], path[i+1:]
	}
	if strings.HasPrefix(path, "/") {
		u.VirtualHost = pyurl.Unquote(path[1:])
	}
	if query != "" {
		q, err := url.ParseQuery(query)
		if err != nil {
			return nil, fmt.Errorf("invalid transport URL %s: query: %w", redactURL(raw), err)
		}
		for k, v := range q {
			u.Query[k] = strings.Join(v, ",")
		}
	}
	for _, part := range strings.Split(netloc, ",") {
		if part == "" {
			continue
		}
		var h TransportHost
		hostport := part
		if i := strings.LastIndexByte(part, '@'); i >= 0 {
			cred := part[:i]
			hostport = part[i+1:]
			user, pass, hasPass := strings.Cut(cred, ":")
			// oslo's TransportURL.parse: urllib.parse.unquote, which
			// keeps a malformed escape instead of failing.
			h.Username = pyurl.Unquote(user)
			if hasPass {
				h.Password = pyurl.Unquote(pass)
			}
		}
		port := ""
		switch {
		case strings.HasPrefix(hostport, "["):
			end := strings.IndexByte(hostport, ']')
			if end < 0 {
				return nil, fmt.Errorf("invalid transport URL %s: invalid IPv6 URL", redactURL(raw))
			}
			h.Hostname = hostport[1:end]
			if _, p, ok := strings.Cut(hostport[end:], ":"); ok {
				port = p
			}
		case strings.Contains(hostport, ":"):
			h.Hostname, port, _ = strings.Cut(hostport, ":")
		default:
			h.Hostname = hostport
		}
		if port != "" {
			p, err := strconv.Atoi(port)
			if err != nil || p < 0 || p > 65535 {
				return nil, fmt.Errorf("invalid transport URL %s: invalid port %q", redactURL(raw), port)
			}
			h.Port = p
		}
		u.Hosts = append(u.Hosts, h)
	}
	if len(u.Hosts) == 0 {
		// "rabbit://" means the local broker with kombu's defaults.
		u.Hosts = []TransportHost{{Hostname: "localhost"}}
	}
	return u, nil
}

// vhost returns the AMQP virtual host ("" means "/").
func (u *TransportURL) vhost() string {
	if u.VirtualHost == "" {
		return "/"
	}
	return u.VirtualHost
}

// String renders the URL with passwords replaced by "***", for logs.
func (u *TransportURL) String() string {
	var hosts []string
	for _, h := range u.Hosts {
		s := ""
		if h.Username != "" {
			s = url.PathEscape(h.Username) + ":***@"
		}
		hosts = append(hosts, s+h.Addr())
	}
	return u.Transport + "://" + strings.Join(hosts, ",") + "/" + url.PathEscape(u.VirtualHost)
}

// redactURL hides credentials of a URL that could not be parsed.
func redactURL(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "<unparsable>"
	}
	var parts []string
	netloc, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		netloc, tail = rest[:i], rest[i:]
	}
	for _, p := range strings.Split(netloc, ",") {
		if i := strings.LastIndexByte(p, '@'); i >= 0 {
			p = "***@" + p[i+1:]
		}
		parts = append(parts, p)
	}
	return scheme + "://" + strings.Join(parts, ",") + tail
}
