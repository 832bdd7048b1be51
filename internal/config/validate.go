package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// Validate checks every value, syntax always and mode-specific requirements
// for the selected mode. It returns the first problem as an *Error.
func (c *Config) Validate() error {
	for _, check := range []func() error{c.validateVIP, c.validateHealth, c.validateL2, c.validateBGP, c.validateBFD, c.validateOutput} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) validateVIP() error {
	if len(c.VIPAddress) == 0 {
		return errorf("VIPAddress", nil, "is required (an address in CIDR form, like 192.0.2.100/32)")
	}
	var v4, v6 int
	for _, p := range c.VIPAddress {
		a := p.Addr()
		switch {
		case a.Zone() != "":
			return errorf("VIPAddress", c.VIPAddress, "%s: an IPv6 zone is not allowed", p)
		case a.Is4In6():
			return errorf("VIPAddress", c.VIPAddress, "%s: write IPv4-mapped addresses as IPv4", p)
		case !a.IsGlobalUnicast() || a.IsLoopback():
			return errorf("VIPAddress", c.VIPAddress, "%s is not a unicast address usable as a VIP", p.Addr())
		case c.Mode == ModeBGP && !host(p):
			return errorf("VIPAddress", c.VIPAddress, "%s: bgp mode announces a host route, /%d: a shorter prefix would be bound on the interface and route the whole subnet to this node", p, a.BitLen())
		case a.Is4():
			v4++
		default:
			v6++
		}
	}
	if v4 > 1 || v6 > 1 {
		return errorf("VIPAddress", c.VIPAddress, "at most one IPv4 and one IPv6 VIP")
	}
	return nil
}

// host reports whether p is a host prefix (/32, /128).
func host(p netip.Prefix) bool { return p.Bits() == p.Addr().BitLen() }

// ErrNoSubnetAddress: the interface has no address in the subnet of a VIP
// with a subnet prefix (yet: at boot it may come later).
var ErrNoSubnetAddress = errors.New("no address of the VIP's subnet on the interface")

// ValidateOnInterface checks the VIPs against the addresses of the L2
// interface: a VIP is a host prefix or has exactly the prefix of the
// interface's subnet, so binding it adds no route. A VIP whose subnet the
// interface has with another prefix length is invalid (*Error); one whose
// subnet the interface has no address in returns ErrNoSubnetAddress.
func (c *Config) ValidateOnInterface(ifname string, addrs []netip.Prefix) error {
	for _, vip := range c.VIPAddress {
		if host(vip) {
			continue
		}
		exact, other := false, netip.Prefix{}
		for _, a := range addrs {
			if a.Masked() == vip.Masked() {
				exact = true
				break
			}
			if a.Overlaps(vip) {
				other = a
			}
		}
		switch {
		case exact:
		case other.IsValid():
			return errorf("VIPAddress", c.VIPAddress, "%s: %s has %s: a VIP is a host prefix (/%d) or exactly the interface's subnet prefix (/%d), else binding it changes the host's routes", vip, ifname, other, vip.Addr().BitLen(), other.Bits())
		default:
			return fmt.Errorf("%s on %s: %w", vip, ifname, ErrNoSubnetAddress)
		}
	}
	return nil
}

// Bounds of the health durations: a check that may take an hour never
// fails in time to matter.
const (
	maxHealthInterval = 5 * time.Minute
	maxHealthTimeout  = time.Minute
)

func (c *Config) validateHealth() error {
	switch {
	case c.APIPort == 0:
		return errorf("APIPort", c.APIPort, "must be 1-65535")
	case c.HealthInterval < 10*time.Millisecond || c.HealthInterval > maxHealthInterval:
		return errorf("HealthInterval", c.HealthInterval, "must be 10ms-%s", maxHealthInterval)
	case c.HealthFastInterval != 0 && (c.HealthFastInterval < 10*time.Millisecond || c.HealthFastInterval > maxHealthInterval):
		return errorf("HealthFastInterval", c.HealthFastInterval, "must be 0 (off) or 10ms-%s", maxHealthInterval)
	case c.HealthTimeout < time.Millisecond || c.HealthTimeout > maxHealthTimeout:
		return errorf("HealthTimeout", c.HealthTimeout, "must be 1ms-%s: a hung apiserver must count as a failed check", maxHealthTimeout)
	case c.HealthHungAfter != 0 && (c.HealthHungAfter < 10*time.Millisecond || c.HealthHungAfter > maxHealthTimeout):
		return errorf("HealthHungAfter", c.HealthHungAfter, "must be 0 (off) or 10ms-%s", maxHealthTimeout)
	case len(c.HealthEtcdPorts) > 64:
		return errorf("HealthEtcdPorts", c.HealthEtcdPorts, "must list at most 64 ports")
	case c.FailThreshold < 1 || c.FailThreshold > 1000:
		return errorf("FailThreshold", c.FailThreshold, "must be 1-1000")
	case c.RiseThreshold < 1 || c.RiseThreshold > 1000:
		return errorf("RiseThreshold", c.RiseThreshold, "must be 1-1000")
	case c.SATokenPath == "":
		return errorf("SATokenPath", nil, "must not be empty")
	}
	return nil
}

func (c *Config) validateL2() error {
	switch {
	case c.VRID < 1 || c.VRID > 255:
		return errorf("VRID", c.VRID, "must be 1-255")
	case c.Priority < 1 || c.Priority > 254:
		return errorf("Priority", c.Priority, "must be 1-254 (255 is reserved for the address owner, 0 for resigning)")
	case c.Priority == 1 && c.FailOpen:
		return errorf("Priority", c.Priority, "must be 2-254: 1 is the fail-open priority of an unhealthy node (or set NOVAEDGE_CP_VIP_FAIL_OPEN=false)")
	case c.AdvertInterval < 10*time.Millisecond || c.AdvertInterval > 40950*time.Millisecond:
		return errorf("AdvertInterval", c.AdvertInterval, "must be 10ms-40.95s")
	case c.AdvertInterval%(10*time.Millisecond) != 0:
		return errorf("AdvertInterval", c.AdvertInterval, "must be a multiple of 10ms (VRRP counts centiseconds)")
	case c.AdvertsPerInterval < 1 || c.AdvertsPerInterval > 10:
		return errorf("AdvertsPerInterval", c.AdvertsPerInterval, "must be 1-10")
	case c.AdvertInterval/time.Duration(c.AdvertsPerInterval) < 10*time.Millisecond:
		return errorf("AdvertsPerInterval", c.AdvertsPerInterval, "must leave 10ms or more between two advertisements (ADVERT_INTERVAL / ADVERTS_PER_INTERVAL)")
	case c.GARPRepeat < 1 || c.GARPRepeat > 100:
		return errorf("GARPRepeat", c.GARPRepeat, "must be 1-100")
	case c.RestartWait < 0 || c.RestartWait > time.Minute:
		return errorf("RestartWait", c.RestartWait, "must be 0 (off) to 1m")
	case c.GARPRefresh != 0 && (c.GARPRefresh < time.Second || c.GARPRefresh > time.Hour):
		return errorf("GARPRefresh", c.GARPRefresh, "must be 0 (off) or 1s-1h")
	}
	for _, p := range c.Peers {
		if !p.IsGlobalUnicast() && !p.IsLinkLocalUnicast() {
			return errorf("Peers", c.Peers, "%s is not a unicast address", p)
		}
	}
	for _, vip := range c.VIPAddress {
		if len(c.Peers) > 0 && len(c.PeersOf(vip.Addr().Is6())) == 0 {
			return errorf("Peers", c.Peers, "no peer of the address family of VIP %s", vip)
		}
	}
	return c.validateSpread()
}

func (c *Config) validateSpread() error {
	// The list spreading uses: SPREAD_BACKENDS, or what it takes of PEERS.
	field, list := "SpreadBackends", any(c.SpreadBackends)
	if len(c.SpreadBackends) == 0 {
		field, list = "Peers", c.Peers
	}
	var effective []netip.Addr // checked: SPREAD_BACKENDS always, what PEERS gives when spreading
	if len(c.SpreadBackends) > 0 || c.Spread {
		effective = c.SpreadBackendList()
	}
	seen := map[netip.Addr]bool{}
	for _, b := range effective {
		switch {
		case !b.IsGlobalUnicast() || b.Zone() != "":
			return errorf(field, list, "%s is not a unicast address of a node (a link-local one cannot be dialled without its interface)", b)
		case c.isVIP(b):
			return errorf(field, list, "%s is a VIP: list the nodes' own addresses (spreading would send the VIP's connections to itself)", b)
		case seen[b]:
			return errorf(field, list, "%s is listed twice", b)
		}
		seen[b] = true
	}
	switch {
	case !c.Spread:
		return nil
	case c.Mode == ModeBGP:
		return errorf("Spread", c.Spread, "is for l2 mode: in bgp mode every healthy node announces the VIP and the routers spread by ECMP")
	case len(c.SpreadBackendList()) == 0:
		return errorf("SpreadBackends", c.SpreadBackends, "is empty and NOVAEDGE_CP_VIP_PEERS has no global unicast address: nothing to spread over but this node (list the control-plane nodes' addresses)")
	}
	return nil
}

func (c *Config) isVIP(a netip.Addr) bool {
	for _, v := range c.VIPAddress {
		if v.Addr() == a {
			return true
		}
	}
	return false
}

// SpreadBackendList is where spreading looks for the other apiservers:
// SPREAD_BACKENDS, else the unicast VRRP peers' global addresses of one
// family, IPv4 if any: dual-stack VIPs need peers of both families, which
// would list every node twice (two backends, two shares of the load).
func (c *Config) SpreadBackendList() []netip.Addr {
	if len(c.SpreadBackends) > 0 {
		return c.SpreadBackends
	}
	var v4, v6 []netip.Addr // a link-local peer cannot be dialled without its interface
	for _, p := range c.Peers {
		switch {
		case !p.IsGlobalUnicast():
		case p.Is4():
			v4 = append(v4, p)
		default:
			v6 = append(v6, p)
		}
	}
	if len(v4) > 0 {
		return v4
	}
	return v6
}

// PeersOf returns the unicast VRRP peers of one address family.
func (c *Config) PeersOf(v6 bool) []netip.Addr {
	var out []netip.Addr
	for _, p := range c.Peers {
		if p.Is6() == v6 {
			out = append(out, p)
		}
	}
	return out
}

func (c *Config) validateBGP() error {
	bgp := c.Mode == ModeBGP
	switch {
	case bgp && c.BGPLocalAS == 0:
		return errorf("BGPLocalAS", nil, "is required in bgp mode (1-4294967295)")
	case bgp && !c.BGPRouterID.IsValid():
		return errorf("BGPRouterID", nil, "is required in bgp mode (an IPv4 address)")
	case c.BGPRouterID.IsValid() && !c.BGPRouterID.Is4():
		return errorf("BGPRouterID", c.BGPRouterID, "must be in IPv4 form")
	case len(c.BGPPeers) > 0 && (c.BGPPeerAddress.IsValid() || c.BGPPeerAS != 0):
		return errorf("BGPPeers", c.BGPPeers, "replaces NOVAEDGE_BGP_PEER_ADDRESS and NOVAEDGE_BGP_PEER_AS: set one or the other")
	case c.BGPPeerAddress.IsValid() && c.BGPPeerAS == 0:
		return errorf("BGPPeerAS", nil, "is required with NOVAEDGE_BGP_PEER_ADDRESS")
	case c.BGPPeerAS != 0 && !c.BGPPeerAddress.IsValid():
		return errorf("BGPPeerAddress", nil, "is required with NOVAEDGE_BGP_PEER_AS")
	case bgp && len(c.BGPPeers) == 0 && !c.BGPPeerAddress.IsValid():
		return errorf("BGPPeerAddress", nil, "is required in bgp mode (or set NOVAEDGE_BGP_PEERS)")
	case c.BGPHoldTime < 3*time.Second || c.BGPHoldTime > 65535*time.Second:
		return errorf("BGPHoldTime", c.BGPHoldTime, "must be 3s-65535s")
	case c.BGPHoldTime%time.Second != 0:
		return errorf("BGPHoldTime", c.BGPHoldTime, "must be whole seconds")
	case c.BGPMultihop < 0 || c.BGPMultihop > 255:
		return errorf("BGPMultihop", c.BGPMultihop, "must be 0-255")
	case len(c.BGPPassword) > maxMD5Password:
		return errorf("BGPPassword", c.BGPPassword, "at most %d bytes (TCP MD5, as per-peer passwords)", maxMD5Password)
	case c.BGPNextHop.IsValid() && !c.BGPNextHop.IsGlobalUnicast():
		return errorf("BGPNextHop", c.BGPNextHop, "must be a unicast address")
	}
	for _, p := range c.BGPPeerList() {
		if !p.Address.IsGlobalUnicast() && !p.Address.IsLinkLocalUnicast() {
			return errorf("BGPPeers", c.BGPPeers, "%s is not a unicast address", p.Address)
		}
	}
	if bgp {
		return c.validateBGPFamilies()
	}
	return nil
}

// validateBGPFamilies: an IPv4 VIP needs an IPv4 peer; an IPv6 VIP goes over
// IPv6 sessions, or over the IPv4 ones (MP-BGP) when there is no IPv6 peer.
func (c *Config) validateBGPFamilies() error {
	for _, vip := range c.VIPAddress {
		if vip.Addr().Is6() || len(c.BGPPeersOf(false)) > 0 {
			continue
		}
		field := "BGPPeers"
		if len(c.BGPPeers) == 0 {
			field = "BGPPeerAddress"
		}
		return errorf(field, c.BGPPeerList(), "no IPv4 peer for VIP %s (IPv4 routes go over IPv4 sessions; IPv6 sessions carry only IPv6 VIPs)", vip)
	}
	return nil
}

// BGPPeersOf returns the BGP peers of one address family.
func (c *Config) BGPPeersOf(v6 bool) PeerList {
	var out PeerList
	for _, p := range c.BGPPeerList() {
		if p.Address.Is6() == v6 {
			out = append(out, p)
		}
	}
	return out
}

// IPv6OverIPv4 says whether an IPv6 VIP is announced over IPv4 sessions
// (there is no IPv6 peer).
func (c *Config) IPv6OverIPv4() bool {
	if c.Mode != ModeBGP || len(c.BGPPeersOf(true)) > 0 {
		return false
	}
	for _, vip := range c.VIPAddress {
		if vip.Addr().Is6() {
			return true
		}
	}
	return false
}

// BGPPeerList returns the BGP peers from either NOVAEDGE_BGP_PEERS or the single-peer pair.
func (c *Config) BGPPeerList() PeerList {
	if len(c.BGPPeers) > 0 {
		return c.BGPPeers
	}
	if c.BGPPeerAddress.IsValid() {
		return PeerList{{Address: c.BGPPeerAddress, AS: c.BGPPeerAS}}
	}
	return nil
}

func (c *Config) validateBFD() error {
	switch {
	case c.BFDDetectMult < 1 || c.BFDDetectMult > 255:
		return errorf("BFDDetectMult", c.BFDDetectMult, "must be 1-255")
	case !bfdInterval(c.BFDTxInterval):
		return errorf("BFDTxInterval", c.BFDTxInterval, "must be 1ms-60s in whole microseconds")
	case !bfdInterval(c.BFDRxInterval):
		return errorf("BFDRxInterval", c.BFDRxInterval, "must be 1ms-60s in whole microseconds")
	case c.BFDAuth != BFDAuthNone && c.BFDAuthKey == "":
		return errorf("BFDAuthKey", nil, "is required with NOVAEDGE_BFD_AUTH=%s", c.BFDAuth)
	case c.BFDAuth == BFDAuthSimple && len(c.BFDAuthKey) > 16:
		return errorf("BFDAuthKey", c.BFDAuthKey, "must be 1-16 bytes for simple authentication")
	case c.BFDAuth != BFDAuthNone && len(c.BFDAuthKey) > 20:
		return errorf("BFDAuthKey", c.BFDAuthKey, "must be 1-20 bytes for SHA1 authentication")
	case c.BFDEnabled && c.Mode != ModeBGP:
		return errorf("BFDEnabled", c.BFDEnabled, "BFD runs with BGP peers: set NOVAEDGE_CP_VIP_MODE=bgp")
	case c.BFDEnabled && c.multihopPeer().IsValid():
		return errorf("BFDEnabled", c.BFDEnabled, "BFD here is single hop (RFC 5881: sent and accepted only with TTL 255), which a multihop BGP peer (%s) never passes: peer directly (NOVAEDGE_BGP_MULTIHOP=0, no multihop= option) or turn BFD off", c.multihopPeer())
	}
	return nil
}

// multihopPeer returns a BGP peer reached over more than one hop (its own
// multihop option or NOVAEDGE_BGP_MULTIHOP), or the zero address.
func (c *Config) multihopPeer() netip.Addr {
	for _, p := range c.BGPPeerList() {
		if p.Multihop > 0 || c.BGPMultihop > 0 {
			return p.Address
		}
	}
	return netip.Addr{}
}

func bfdInterval(d time.Duration) bool {
	return d >= time.Millisecond && d <= time.Minute && d%time.Microsecond == 0
}

func (c *Config) validateOutput() error {
	if c.MetricsAddr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(c.MetricsAddr)
	if err != nil {
		return errorf("MetricsAddr", c.MetricsAddr, "want HOST:PORT (like 127.0.0.1:9450), or empty to turn it off")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return errorf("MetricsAddr", c.MetricsAddr, "port must be 1-65535")
	}
	return nil
}
