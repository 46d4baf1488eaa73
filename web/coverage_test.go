package web

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/mqtt"
)

// bridgeWithGaps is bridge plus a device with an expose Pilothouse cannot
// model (partly modelled) and one without a definition (not modelled).
var bridgeWithGaps = strings.TrimSuffix(strings.TrimSpace(bridge), "]") + `,
 {"ieee_address":"0x05","type":"EndDevice","friendly_name":"odd_sensor","supported":true,
  "definition":{"vendor":"Acme","model":"O1","description":"Odd sensor","exposes":[
   {"type":"binary","name":"contact","property":"contact","access":1,"value_on":true,"value_off":false},
   {"type":"hologram","name":"aura","property":"aura","access":1}]}},
 {"ieee_address":"0x06","type":"EndDevice","friendly_name":"new_plug","definition":null}
]`

// TestDevicesCoverage: the Devices page says how many devices are fully
// modelled, as /healthz counts them, and links the others; a device's page
// says what was not modelled and why. A scoped login's counts are of its
// scope.
func TestDevicesCoverage(t *testing.T) {
	f := newFixture(t, testPrincipals())
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridgeWithGaps)})
	if cov := f.devs.Coverage(); cov.Devices != 5 || cov.Partial != 1 || cov.Unmodelled != 1 {
		t.Fatalf("catalog coverage %+v, want 5 devices, 1 partial, 1 unmodelled", cov)
	}
	c := f.client()
	c.login(ownerTok)

	_, body, _ := c.get("/devices")
	mustContain(t, "devices page", body,
		`<p class="sub" id="coverage">5 devices: 3 fully modelled, 1 partly modelled and 1 not modelled at all. <a href="/devices?gaps=1">See which</a></p>`,
		`data-fidelity="partial"`, `data-fidelity="unmodelled"`)

	_, body, _ = c.get("/devices?gaps=1")
	mustContain(t, "devices not fully modelled", body, `id="dev-odd_sensor"`, `id="dev-new_plug"`,
		"2 of 6 devices match, among those not fully modelled.", `<input type="hidden" name="gaps" value="1">`)
	mustNotContain(t, "devices not fully modelled", body, `id="dev-hall_light"`, `id="dev-front_lock"`, `href="/devices?gaps=1">See which`)

	_, body, _ = c.get("/devices/odd_sensor")
	mustContain(t, "partly modelled device", body, `id="gaps"`, "Partly modelled",
		"What it could not model, and why:", `<li>expose &#34;aura&#34; of unknown type &#34;hologram&#34;</li>`)
	mustNotContain(t, "partly modelled device", body, "Not fully modelled:")

	_, body, _ = c.get("/devices/new_plug")
	mustContain(t, "unmodelled device", body, `id="gaps"`, "Not modelled",
		"<li>Zigbee device not yet interviewed or not supported by Zigbee2MQTT; no states are known.</li>")

	_, body, _ = c.get("/devices/hall_light")
	mustNotContain(t, "fully modelled device", body, `id="gaps"`, "data-fidelity")

	g := f.client()
	g.login(guestTok)
	_, body, _ = g.get("/devices")
	mustContain(t, "guest's devices page", body,
		`id="coverage">4 devices in your scope: 2 fully modelled, 1 partly modelled and 1 not modelled at all.`)
}

func TestCoverageText(t *testing.T) {
	cases := []struct {
		c    coverageView
		want string
	}{
		{coverageView{}, ""},
		{coverageView{Devices: 1, Full: 1}, "1 device, fully modelled."},
		{coverageView{Devices: 312, Full: 312}, "312 devices, all fully modelled."},
		{coverageView{Devices: 312, Full: 309, Partial: 3}, "312 devices: 309 fully modelled and 3 partly modelled."},
		{coverageView{Devices: 2, Unmodelled: 2, Scoped: true}, "2 devices in your scope: all 2 not modelled at all."},
		{coverageView{Devices: 2, Full: 2, Refused: "1"}, "2 devices, modelled as far as read. 1 message was refused for its size (a discovery config or a state)."},
		{coverageView{Devices: 2, Full: 1, Partial: 1, Refused: "3"}, "2 devices: 1 fully modelled and 1 partly modelled. 3 messages were refused for their size (discovery configs or states)."},
		{coverageView{Refused: "1"}, "1 message was refused for its size (a discovery config or a state)."},
	}
	for _, c := range cases {
		if got := c.c.Text(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.c, got, c.want)
		}
	}
}
