package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestDevicesPageIsBounded: a house flooded with devices by discovery
// lists maxListed of them on one page and says how many more match.
func TestDevicesPageIsBounded(t *testing.T) {
	f := newFixture(t, nil)
	var devs []string
	for i := range maxListed + 100 {
		devs = append(devs, fmt.Sprintf(`{"ieee_address":"0x%016x","type":"EndDevice","friendly_name":"flood_%d","supported":true,
		  "definition":{"vendor":"V","model":"M","description":"d","exposes":[{"type":"binary","name":"contact","property":"contact","access":1,"value_on":true,"value_off":false}]}}`, i+100, i))
	}
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte("[" + strings.Join(devs, ",") + "]")})
	c := f.client()
	c.login(ownerTok)
	_, body, _ := c.get("/devices")
	if n := strings.Count(body, `id="dev-flood_`); n > maxListed || n < maxListed-10 {
		t.Fatalf("%d flood devices listed", n)
	}
	mustContain(t, "devices page", body, `id="more"`, "more devices match and are not listed")
	if len(body) > 2<<20 {
		t.Fatalf("the page is %d bytes", len(body))
	}
}
