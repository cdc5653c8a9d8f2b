package clientmeta

import "net/netip"

// Immutable lookup tables; never modified after initialisation.
var (
	// nonPublicV4 lists IPv4 special-purpose ranges (RFC 6890 and
	// successors) that must never be the target of a server-side fetch.
	nonPublicV4 = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
		netip.MustParsePrefix("10.0.0.0/8"),      // private
		netip.MustParsePrefix("100.64.0.0/10"),   // CGNAT shared space
		netip.MustParsePrefix("127.0.0.0/8"),     // loopback
		netip.MustParsePrefix("169.254.0.0/16"),  // link-local (cloud metadata)
		netip.MustParsePrefix("172.16.0.0/12"),   // private
		netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
		netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
		netip.MustParsePrefix("192.88.99.0/24"),  // deprecated 6to4 relay anycast
		netip.MustParsePrefix("192.168.0.0/16"),  // private
		netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
		netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
		netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
		netip.MustParsePrefix("224.0.0.0/4"),     // multicast
		netip.MustParsePrefix("240.0.0.0/4"),     // reserved, includes broadcast
	}
	// globalUnicastV6 is the only IPv6 block currently allocated for global
	// unicast; everything outside it (loopback, ULA, link-local, multicast,
	// discard, IPv4-compatible…) is refused wholesale.
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	// nonPublicV6 lists special-purpose blocks inside 2000::/3.
	nonPublicV6 = []netip.Prefix{
		netip.MustParsePrefix("2001::/23"),     // IETF protocol assignments (Teredo handled first)
		netip.MustParsePrefix("2001:db8::/32"), // documentation
		netip.MustParsePrefix("3fff::/20"),     // documentation (RFC 9637)
	}
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64 prefix
	sixToFour = netip.MustParsePrefix("2002::/16")
	teredo    = netip.MustParsePrefix("2001::/32")
)

// PublicAddress reports whether ip is a publicly routable unicast address,
// the only kind a metadata fetch may connect to. It is false for the zero
// Addr, zoned addresses, loopback, private, CGNAT, link-local, multicast,
// unspecified, benchmarking, documentation and reserved ranges, IPv6 ULA and
// link-local, and for IPv4-mapped, NAT64, 6to4 and Teredo addresses whose
// embedded IPv4 address is itself not public. It is a pure function.
func PublicAddress(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return publicV4(ip)
	}
	b := ip.As16()
	switch {
	case nat64.Contains(ip):
		return publicV4(netip.AddrFrom4([4]byte(b[12:16])))
	case !globalUnicastV6.Contains(ip):
		return false
	case sixToFour.Contains(ip):
		return publicV4(netip.AddrFrom4([4]byte(b[2:6])))
	case teredo.Contains(ip):
		// Teredo carries the server address in bits 32–63 and the client
		// address, bit-inverted, in the last 32 bits.
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return publicV4(netip.AddrFrom4([4]byte(b[4:8]))) && publicV4(netip.AddrFrom4(client))
	}
	for _, p := range nonPublicV6 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

func publicV4(ip netip.Addr) bool {
	for _, p := range nonPublicV4 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
