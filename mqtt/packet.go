package mqtt

// The MQTT 3.1.1 packet types and the codec of the packets that set a
// session up (CONNECT/CONNACK, SUBSCRIBE/UNSUBSCRIBE); readPacket decodes
// any packet (the CONNACK, the tests' brokers, FuzzReadPacket). What the
// event path carries is coded where it is read (conn.go) or sent (publish.go).

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MQTT 3.1.1 control packet types (§2.2.1), the high nibble of a packet's
// first byte.
const (
	connectType     = 1
	connackType     = 2
	publishType     = 3
	pubackType      = 4
	pubrecType      = 5
	pubrelType      = 6
	pubcompType     = 7
	subscribeType   = 8
	subackType      = 9
	unsubscribeType = 10
	unsubackType    = 11
	pingreqType     = 12
	pingrespType    = 13
	disconnectType  = 14
)

// PUBLISH flags (§3.3.1) in the first byte.
const (
	dupBit    = 0x08
	qosBits   = 0x06
	retainBit = 0x01
)

const (
	// maxRemainingLength is the largest packet MQTT can frame (§2.2.3).
	maxRemainingLength = 268_435_455
	// maxControlPacket bounds every packet from the broker but PUBLISH (a
	// SUBACK of subscribeBatch filters is 130 bytes).
	maxControlPacket = 64 << 10
)

// Fixed packets.
var (
	pingreq    = []byte{pingreqType << 4, 0}
	disconnect = []byte{disconnectType << 4, 0}
)

// packet is one decoded control packet; only the fields of its type are set.
type packet struct {
	kind           byte   // the packet type
	flags          byte   // the low nibble of the first byte
	id             uint16 // packet identifier
	topic          string // PUBLISH
	payload        []byte // PUBLISH
	sessionPresent bool   // CONNACK
	code           byte   // CONNACK return code
	codes          []byte // SUBACK return codes
	connect        *connectFields
	filters        []string // SUBSCRIBE, UNSUBSCRIBE
	qos            []byte   // SUBSCRIBE: each filter's
}

func (p *packet) pubQoS() byte { return (p.flags & qosBits) >> 1 }

// connectFields are what a CONNECT (§3.1) carries.
type connectFields struct {
	clientID           string
	clean              bool
	keepAlive          uint16 // seconds
	username, password string
	hasUser, hasPass   bool
	will               *Will
}

// Will is the last will the broker publishes for the client when its
// connection ends without a DISCONNECT (MQTT 3.1.1 §3.1.2.5).
type Will struct {
	Topic   string
	Payload []byte
	QoS     byte
	Retain  bool
}

// readPacket reads one whole packet whose remaining length is at most max.
func readPacket(r *bufio.Reader, max int) (packet, error) {
	b0, length, err := readHeader(r)
	if err != nil {
		return packet{}, err
	}
	if length > max {
		return packet{}, fmt.Errorf("mqtt: packet of type %d with %d bytes (at most %d here)", b0>>4, length, max)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return packet{}, noEOF(err)
	}
	return decode(b0, body)
}

// decode parses a packet's body; it never keeps a reference to body but
// for a PUBLISH payload.
func decode(b0 byte, body []byte) (packet, error) {
	if b0>>4 == publishType {
		return decodePublish(packet{kind: publishType, flags: b0 & 0x0f}, body)
	}
	return decodeControl(b0, body)
}

func decodeSubscribe(p packet, body []byte) (packet, error) {
	if len(body) < 2 {
		return packet{}, errors.New("mqtt: malformed SUBSCRIBE: no packet identifier")
	}
	p.id, body = be16(body), body[2:]
	if len(body) == 0 {
		return packet{}, errors.New("mqtt: malformed SUBSCRIBE: no topic filter") // §3.8.3-3, §3.10.3-2
	}
	for len(body) > 0 {
		f, rest, ok := cutString(body)
		if !ok {
			return packet{}, errors.New("mqtt: malformed SUBSCRIBE: filter longer than the packet")
		}
		p.filters, body = append(p.filters, f), rest
		if p.kind == subscribeType {
			if len(body) == 0 {
				return packet{}, errors.New("mqtt: malformed SUBSCRIBE: no QoS")
			}
			p.qos, body = append(p.qos, body[0]), body[1:]
		}
	}
	return p, nil
}

func decodeConnect(p packet, body []byte) (packet, error) {
	bad := errors.New("mqtt: malformed CONNECT")
	name, rest, ok := cutString(body)
	if !ok || name != "MQTT" || len(rest) < 4 {
		return packet{}, bad
	}
	flags := rest[1]
	cf := &connectFields{clean: flags&0x02 != 0, keepAlive: be16(rest[2:]), hasUser: flags&0x80 != 0, hasPass: flags&0x40 != 0}
	if cf.clientID, rest, ok = cutString(rest[4:]); !ok {
		return packet{}, bad
	}
	if flags&0x04 != 0 {
		w := &Will{QoS: (flags >> 3) & 3, Retain: flags&0x20 != 0}
		var payload string
		if w.Topic, rest, ok = cutString(rest); !ok {
			return packet{}, bad
		}
		if payload, rest, ok = cutString(rest); !ok {
			return packet{}, bad
		}
		w.Payload, cf.will = []byte(payload), w
	}
	if cf.hasUser {
		if cf.username, rest, ok = cutString(rest); !ok {
			return packet{}, bad
		}
	}
	if cf.hasPass {
		if cf.password, rest, ok = cutString(rest); !ok {
			return packet{}, bad
		}
	}
	if len(rest) != 0 {
		return packet{}, bad
	}
	p.connect = cf
	return p, nil
}

// encodeConnect frames a CONNECT (§3.1) for MQTT 3.1.1.
func encodeConnect(cf *connectFields) []byte {
	flags := byte(0)
	if cf.clean {
		flags |= 0x02
	}
	body := appendString(nil, "MQTT")
	if w := cf.will; w != nil {
		flags |= 0x04 | (w.QoS&3)<<3
		if w.Retain {
			flags |= 0x20
		}
	}
	if cf.hasUser {
		flags |= 0x80
	}
	if cf.hasPass {
		flags |= 0x40
	}
	body = append(body, 4, flags, byte(cf.keepAlive>>8), byte(cf.keepAlive))
	body = appendString(body, cf.clientID)
	if w := cf.will; w != nil {
		body = appendString(body, w.Topic)
		body = appendString(body, string(w.Payload))
	}
	if cf.hasUser {
		body = appendString(body, cf.username)
	}
	if cf.hasPass {
		body = appendString(body, cf.password)
	}
	return append(appendHeader(nil, connectType<<4, len(body)), body...)
}

// encodeSubscribe frames a SUBSCRIBE (§3.8) of filters at their QoS.
func encodeSubscribe(id uint16, filters []string, qos []byte) []byte {
	body := []byte{byte(id >> 8), byte(id)}
	for i, f := range filters {
		body = append(appendString(body, f), qos[i])
	}
	return append(appendHeader(nil, subscribeType<<4|0x02, len(body)), body...)
}

// encodeUnsubscribe frames an UNSUBSCRIBE (§3.10) of filters.
func encodeUnsubscribe(id uint16, filters []string) []byte {
	body := []byte{byte(id >> 8), byte(id)}
	for _, f := range filters {
		body = appendString(body, f)
	}
	return append(appendHeader(nil, unsubscribeType<<4|0x02, len(body)), body...)
}

// connackReasons are the CONNACK refusals of MQTT 3.1.1 (§3.2.2.3).
var connackReasons = map[byte]string{
	1: "unacceptable protocol version",
	2: "identifier rejected",
	3: "server unavailable",
	4: "bad user name or password",
	5: "not authorized",
}

func connackReason(code byte) string {
	if r, ok := connackReasons[code]; ok {
		return r
	}
	return fmt.Sprintf("unknown return code %d", code)
}
