package config

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"time"
)

// Notify configures hold notifications: webhooks told when a step is held
// for an operator and when the hold is settled (docs/notifications.md).
type Notify struct {
	// Webhooks are the endpoints notified, each delivered to in event
	// order, at least once. In the environment, item n's settings are
	// TOOLGUARD_NOTIFY_WEBHOOKS_<n>_URL and so on; they override the
	// file's item n, or add one. Empty = no notifications.
	Webhooks []Webhook `yaml:"webhooks" envPrefix:"WEBHOOKS_"`
	// ConsoleURL is the web console's base URL as operators reach it,
	// for the links in notifications; "" = http://<admin.listen>/ui/.
	ConsoleURL string `yaml:"console_url" env:"CONSOLE_URL"`
	// DeliveryAttempts bounds the attempts at one event per webhook; after
	// the last one fails the event is dropped for that webhook (logged,
	// counted). 0 = retry until delivered.
	DeliveryAttempts int `yaml:"max_attempts" env:"MAX_ATTEMPTS"`
	// Backoff is the wait after the first failed attempt; each later
	// failure doubles it, up to MaxBackoff, with jitter.
	Backoff    time.Duration `yaml:"backoff" env:"BACKOFF"`
	MaxBackoff time.Duration `yaml:"max_backoff" env:"MAX_BACKOFF"`
	// DeliveryTimeout bounds one attempt, from dialling to the answer's
	// status line.
	DeliveryTimeout time.Duration `yaml:"timeout" env:"TIMEOUT"`
}

// Webhook is one entry of Notify.Webhooks.
type Webhook struct {
	// URL receives a POST per event: an absolute http(s) URL. It may
	// itself be a secret (Slack's incoming-webhook URLs are): it is
	// printed with its path and query masked.
	URL string `yaml:"url" env:"URL"`
	// Secret keys the HMAC-SHA256 signature of each delivery
	// (Toolguard-Signature); required for format json, at least 16 bytes.
	Secret     string `yaml:"secret" env:"SECRET"`
	SecretFile string `yaml:"secret_file" env:"SECRET_FILE"` // file holding Secret, read by LoadSecrets
	// PayloadFormat is the body's shape: json (toolguard's event) or
	// slack (an incoming-webhook message).
	PayloadFormat WebhookFormat `yaml:"format" env:"FORMAT"`
}

// WebhookFormat is the shape of a webhook's body. The zero value is
// WebhookJSON.
type WebhookFormat int

// Webhook formats.
const (
	WebhookJSON  WebhookFormat = iota // toolguard's event, signed
	WebhookSlack                      // Slack incoming-webhook text and blocks
)

var webhookFormatEnum = enum{"format", []string{"json", "slack"}}

// ParseWebhookFormat parses "json" or "slack".
func ParseWebhookFormat(s string) (WebhookFormat, error) {
	i, err := webhookFormatEnum.parse(s)
	return WebhookFormat(i), err
}

func (f WebhookFormat) String() string { return webhookFormatEnum.String("WebhookFormat", int(f)) }

// MarshalText implements encoding.TextMarshaler.
func (f WebhookFormat) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseWebhookFormat.
func (f *WebhookFormat) UnmarshalText(text []byte) error {
	v, err := ParseWebhookFormat(string(text))
	if err == nil {
		*f = v
	}
	return err
}

// minWebhookSecret is the shortest webhook secret accepted, in bytes.
const minWebhookSecret = 16

// ConsoleBase is the console URL notifications link to: ConsoleURL, or
// the console on adminAddr (the admin listener's address, host:port) when
// it is empty; an unspecified host (0.0.0.0, ::, "") becomes localhost.
func (n Notify) ConsoleBase(adminAddr string) string {
	if n.ConsoleURL != "" {
		return n.ConsoleURL
	}
	host, port, err := net.SplitHostPort(adminAddr)
	if err != nil {
		return "http://" + adminAddr + "/ui/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/ui/"
}

func (n Notify) validate() error {
	seen := map[string]int{}
	for i, w := range n.Webhooks {
		if err := w.validate(i); err != nil {
			return err
		}
		if j, dup := seen[w.URL]; dup {
			return invalid(webhookField(i, "url"), RedactURL(w.URL), fmt.Sprintf("the same URL as notify.webhooks[%d]", j))
		}
		seen[w.URL] = i
	}
	if n.ConsoleURL != "" {
		if u, err := url.Parse(n.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return invalid("notify.console_url", n.ConsoleURL, "want an absolute http(s) URL")
		}
	}
	checks := []error{
		atLeast("notify.max_attempts", n.DeliveryAttempts, 0),
		positive("notify.backoff", n.Backoff),
		positive("notify.timeout", n.DeliveryTimeout),
	}
	if n.MaxBackoff < n.Backoff {
		checks = append(checks, invalid("notify.max_backoff", n.MaxBackoff.String(), "must be >= notify.backoff ("+n.Backoff.String()+")"))
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	return nil
}

func (w Webhook) validate(i int) error {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return invalid(webhookField(i, "url"), RedactURL(w.URL), "want an absolute http(s) URL")
	}
	if u.User != nil {
		return invalid(webhookField(i, "url"), RedactURL(w.URL), "want no user:password@ in the URL (deliveries are signed with secret)")
	}
	if err := checkEnum(webhookField(i, "format"), webhookFormatEnum.valid(int(w.PayloadFormat)), w.PayloadFormat.String(), webhookFormatEnum); err != nil {
		return err
	}
	switch {
	case w.Secret != "" && w.SecretFile != "":
		return &Error{Field: webhookField(i, "secret_file"), Value: w.SecretFile,
			Msg: fmt.Sprintf("set together with %s; use one of them (got %s)", webhookField(i, "secret"), w.SecretFile)}
	case w.SecretFile != "":
		return nil // LoadSecrets reads and checks it
	case w.Secret == "" && w.PayloadFormat == WebhookJSON:
		return &Error{Field: webhookField(i, "secret"), Msg: "required with format json, so that receivers can verify each delivery: set secret_file (or secret)"}
	case w.Secret != "" && len(w.Secret) < minWebhookSecret:
		return &Error{Field: webhookField(i, "secret"), Msg: fmt.Sprintf("must be at least %d bytes (got %d; e.g. openssl rand -hex 32)", minWebhookSecret, len(w.Secret))}
	}
	return nil
}

// webhookField is the yaml path of a setting of webhook i:
// "notify.webhooks[0].url".
func webhookField(i int, name string) string {
	return "notify.webhooks[" + strconv.Itoa(i) + "]." + name
}

// RedactURL prints a URL without what may make it a secret: its user
// information, path and query ("https://hooks.slack.com/…"). Text that does
// not parse as an absolute URL is masked whole.
func RedactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if s == "" {
			return ""
		}
		return "REDACTED"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		out += "/…"
	}
	return out
}

// loadWebhookSecrets reads each webhook's secret_file into its secret, on
// a copy of the list (copies of a Config may share it).
func (n *Notify) loadWebhookSecrets() error {
	if len(n.Webhooks) == 0 {
		return nil
	}
	hooks := append([]Webhook(nil), n.Webhooks...)
	for i := range hooks {
		if hooks[i].SecretFile == "" {
			continue
		}
		if err := loadSecret(&hooks[i].Secret, &hooks[i].SecretFile, "notify.webhooks["+strconv.Itoa(i)+"].secret"); err != nil {
			return err
		}
		if s := hooks[i].Secret; len(s) < minWebhookSecret {
			return &Error{Field: webhookField(i, "secret"), Msg: fmt.Sprintf("must be at least %d bytes (got %d; e.g. openssl rand -hex 32)", minWebhookSecret, len(s))}
		}
	}
	n.Webhooks = hooks
	return nil
}
