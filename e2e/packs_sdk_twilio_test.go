package e2e

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	twclient "github.com/twilio/twilio-go/client"
	twilioapi "github.com/twilio/twilio-go/rest/api/v2010"
)

// twilioTransport is twilio-go's HTTP transport: it sends what twilio-go
// addresses to api.twilio.com to the front before the mock instead (as a
// base URL would; twilio-go has none to set), through toolguard, and keeps
// the last answer, which twilio-go does not return.
type twilioTransport struct {
	base http.RoundTripper
	host string // the front's host:port
	mu   sync.Mutex
	last *http.Response
}

func (tt *twilioTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == "api.twilio.com" {
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = tt.host, tt.host
	}
	resp, err := tt.base.RoundTrip(r)
	tt.mu.Lock()
	tt.last = resp
	tt.mu.Unlock()
	return resp, err
}

func (tt *twilioTransport) answer() *http.Response {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return tt.last
}

// twilioSID is a Twilio SID: a two-letter prefix and 32 hex digits, as
// Twilio's description requires of every SID in a path.
func twilioSID(prefix string, n int) string {
	const hex = "0123456789abcdef"
	return prefix + strings.Repeat(string(hex[n%16]), 32)
}

// twilioThrough is twilio-go through toolguard p, its api.twilio.com at
// front.
func twilioThrough(t *testing.T, p *proc, front *mockFront) (*twilioapi.ApiService, *twilioTransport) {
	t.Helper()
	hc := p.client(t)
	tt := &twilioTransport{base: hc.Transport, host: front.host()}
	hc.Transport = tt
	c := &twclient.Client{Credentials: twclient.NewCredentials(twilioSID("AC", 1), "authtoken1"), HTTPClient: hc}
	c.SetAccountSid(twilioSID("AC", 1))
	// The 2010 API's service alone: twilio.NewRestClient builds every
	// service of the SDK, which the test would compile for nothing.
	return twilioapi.NewApiService(twclient.NewRequestHandler(c)), tt
}

// twilioWrites are twilio-go's writes to the 2010-04-01 API: messages,
// calls, conferences, queues, numbers, applications, addresses, keys,
// usage triggers, SIP domains and the account, each with arguments
// Twilio's description accepts, each on a path of its own.
func twilioWrites(api *twilioapi.ApiService, tt *twilioTransport) []sdkWrite {
	w := func(name string, call func() error) sdkWrite {
		return sdkWrite{name: name, call: func(context.Context) (*http.Response, error) {
			err := call()
			return tt.answer(), err
		}}
	}
	ignore := func(_ any, err error) error { return err }
	msg := &twilioapi.CreateMessageParams{}
	msg.SetTo("+15558675310")
	msg.SetFrom("+15017122661")
	msg.SetBody("Your refund of order 77 is on its way.")
	redact := &twilioapi.UpdateMessageParams{}
	redact.SetBody("")
	call := &twilioapi.CreateCallParams{}
	call.SetTo("+15558675310")
	call.SetFrom("+15017122661")
	call.SetUrl("https://example.com/twiml/refund.xml")
	hangUp := &twilioapi.UpdateCallParams{}
	hangUp.SetStatus("completed")
	queue := &twilioapi.CreateQueueParams{}
	queue.SetFriendlyName("refunds")
	queueSize := &twilioapi.UpdateQueueParams{}
	queueSize.SetMaxSize(50)
	number := &twilioapi.CreateIncomingPhoneNumberParams{}
	number.SetPhoneNumber("+15017122661")
	numberName := &twilioapi.UpdateIncomingPhoneNumberParams{}
	numberName.SetFriendlyName("Refunds line")
	app := &twilioapi.CreateApplicationParams{}
	app.SetFriendlyName("Refunds IVR")
	appURL := &twilioapi.UpdateApplicationParams{}
	appURL.SetVoiceUrl("https://example.com/twiml/ivr.xml")
	addr := &twilioapi.CreateAddressParams{}
	addr.SetCustomerName("Ada Lovelace")
	addr.SetStreet("1 Main St")
	addr.SetCity("Springfield")
	addr.SetRegion("IL")
	addr.SetPostalCode("62701")
	addr.SetIsoCountry("US")
	addrName := &twilioapi.UpdateAddressParams{}
	addrName.SetFriendlyName("Head office")
	key := &twilioapi.CreateNewKeyParams{}
	key.SetFriendlyName("refunds-agent")
	keyName := &twilioapi.UpdateKeyParams{}
	keyName.SetFriendlyName("refunds-agent-2")
	participant := &twilioapi.CreateParticipantParams{}
	participant.SetFrom("+15017122661")
	participant.SetTo("+15558675310")
	mute := &twilioapi.UpdateParticipantParams{}
	mute.SetMuted(true)
	endConference := &twilioapi.UpdateConferenceParams{}
	endConference.SetStatus("completed")
	trigger := &twilioapi.CreateUsageTriggerParams{}
	trigger.SetCallbackUrl("https://example.com/usage")
	trigger.SetTriggerValue("1000")
	trigger.SetUsageCategory("sms")
	domain := &twilioapi.CreateSipDomainParams{}
	domain.SetDomainName("refunds.sip.twilio.com")
	account := &twilioapi.CreateAccountParams{}
	account.SetFriendlyName("Refunds subaccount")
	suspend := &twilioapi.UpdateAccountParams{}
	suspend.SetStatus("suspended")
	validate := &twilioapi.CreateValidationRequestParams{}
	validate.SetPhoneNumber("+15558675311")
	return []sdkWrite{
		w("CreateMessage", func() error { return ignore(api.CreateMessage(msg)) }),
		w("UpdateMessage", func() error { return ignore(api.UpdateMessage(twilioSID("SM", 2), redact)) }),
		w("DeleteMessage", func() error { return api.DeleteMessage(twilioSID("SM", 3), &twilioapi.DeleteMessageParams{}) }),
		w("CreateCall", func() error { return ignore(api.CreateCall(call)) }),
		w("UpdateCall", func() error { return ignore(api.UpdateCall(twilioSID("CA", 4), hangUp)) }),
		w("DeleteCall", func() error { return api.DeleteCall(twilioSID("CA", 5), &twilioapi.DeleteCallParams{}) }),
		w("CreateCallRecording", func() error {
			return ignore(api.CreateCallRecording(twilioSID("CA", 6), &twilioapi.CreateCallRecordingParams{}))
		}),
		w("UpdateConference", func() error { return ignore(api.UpdateConference(twilioSID("CF", 7), endConference)) }),
		w("CreateParticipant", func() error { return ignore(api.CreateParticipant(twilioSID("CF", 8), participant)) }),
		w("UpdateParticipant", func() error {
			return ignore(api.UpdateParticipant(twilioSID("CF", 9), twilioSID("CA", 9), mute))
		}),
		w("DeleteParticipant", func() error {
			return api.DeleteParticipant(twilioSID("CF", 10), twilioSID("CA", 10), &twilioapi.DeleteParticipantParams{})
		}),
		w("CreateQueue", func() error { return ignore(api.CreateQueue(queue)) }),
		w("UpdateQueue", func() error { return ignore(api.UpdateQueue(twilioSID("QU", 11), queueSize)) }),
		w("DeleteQueue", func() error { return api.DeleteQueue(twilioSID("QU", 12), &twilioapi.DeleteQueueParams{}) }),
		w("CreateIncomingPhoneNumber", func() error { return ignore(api.CreateIncomingPhoneNumber(number)) }),
		w("UpdateIncomingPhoneNumber", func() error {
			return ignore(api.UpdateIncomingPhoneNumber(twilioSID("PN", 13), numberName))
		}),
		w("DeleteIncomingPhoneNumber", func() error {
			return api.DeleteIncomingPhoneNumber(twilioSID("PN", 14), &twilioapi.DeleteIncomingPhoneNumberParams{})
		}),
		w("CreateApplication", func() error { return ignore(api.CreateApplication(app)) }),
		w("UpdateApplication", func() error { return ignore(api.UpdateApplication(twilioSID("AP", 15), appURL)) }),
		w("DeleteApplication", func() error {
			return api.DeleteApplication(twilioSID("AP", 0), &twilioapi.DeleteApplicationParams{})
		}),
		w("CreateAddress", func() error { return ignore(api.CreateAddress(addr)) }),
		w("UpdateAddress", func() error { return ignore(api.UpdateAddress(twilioSID("AD", 1), addrName)) }),
		w("DeleteAddress", func() error { return api.DeleteAddress(twilioSID("AD", 2), &twilioapi.DeleteAddressParams{}) }),
		w("CreateNewKey", func() error { return ignore(api.CreateNewKey(key)) }),
		w("UpdateKey", func() error { return ignore(api.UpdateKey(twilioSID("SK", 3), keyName)) }),
		w("DeleteKey", func() error { return api.DeleteKey(twilioSID("SK", 4), &twilioapi.DeleteKeyParams{}) }),
		w("CreateUsageTrigger", func() error { return ignore(api.CreateUsageTrigger(trigger)) }),
		w("DeleteUsageTrigger", func() error {
			return api.DeleteUsageTrigger(twilioSID("UT", 5), &twilioapi.DeleteUsageTriggerParams{})
		}),
		w("CreateSipDomain", func() error { return ignore(api.CreateSipDomain(domain)) }),
		w("DeleteSipDomain", func() error { return api.DeleteSipDomain(twilioSID("SD", 6), &twilioapi.DeleteSipDomainParams{}) }),
		w("CreateValidationRequest", func() error { return ignore(api.CreateValidationRequest(validate)) }),
		w("CreateAccount", func() error { return ignore(api.CreateAccount(account)) }),
		w("UpdateAccount", func() error { return ignore(api.UpdateAccount(twilioSID("AC", 7), suspend)) }),
	}
}

// twilio-go, Twilio's official Go SDK, through the shipped Twilio pack
// against Prism serving Twilio's own OpenAPI description (twilio-oai):
// each write is made twice with the same arguments and must reach Twilio
// once. (twilio-go neither retries nor sends an idempotency key of its
// own.) A hold (approval required on create_message) reaches twilio-go as
// the *twclient.TwilioRestError it decodes, and nothing reaches Twilio.
func TestPackTwilioSDK(t *testing.T) {
	front := newMockFront(t, startPrism(t, twilioOpenAPI), true)
	pack := packAt(t, "twilio", "https", map[string]string{"api.twilio.com": front.host()})
	start := func(t *testing.T, rules string) *proc {
		s := newSetup(t, map[string]string{"twilio.yaml": rules})
		s.args = append(s.args, "--config", writeConfig(t, s.dir, "upstream:\n  ca_file: "+(&upstream{Server: front.Server}).caPEM(t, s.dir)+"\n"))
		return s.start(t)
	}

	t.Run("each write twice", func(t *testing.T) {
		api, tt := twilioThrough(t, start(t, pack), front)
		checkOnceEach(t, "Twilio", callTwice(t, twilioWrites(api, tt), front.writeCount))
	})

	t.Run("hold", func(t *testing.T) {
		api, tt := twilioThrough(t, start(t, requireApproval(t, pack, "create_message")), front)
		msg := &twilioapi.CreateMessageParams{}
		msg.SetTo("+15558675312")
		msg.SetFrom("+15017122661")
		msg.SetBody("Held for approval.")
		route := "POST /2010-04-01/Accounts/" + twilioSID("AC", 1) + "/Messages.json"
		before := front.count(route)
		_, err := api.CreateMessage(msg)
		var twErr *twclient.TwilioRestError
		if !errors.As(err, &twErr) || twErr.Status != http.StatusConflict {
			t.Fatalf("error = %#v, want a decoded *twclient.TwilioRestError, status 409", err)
		}
		if twErr.Message == "" {
			t.Logf("the hold reaches twilio-go without a message (%+v): the pack declares no errors envelope with Twilio's message field", *twErr)
		}
		resp := tt.answer()
		if resp == nil || resp.Header.Get("Toolguard-Key") == "" {
			t.Errorf("the hold carries no Toolguard-Key")
		}
		if n := front.count(route) - before; n != 0 {
			t.Errorf("held messages that reached Twilio = %d, want 0", n)
		}
	})
}
