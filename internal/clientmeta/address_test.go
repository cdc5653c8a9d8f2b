package clientmeta

import (
	"net/netip"
	"testing"
)

func TestPublicAddress(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		// IPv4 public.
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"93.184.216.34", true},
		{"172.15.255.255", true},
		{"172.32.0.0", true},
		{"100.63.255.255", true},
		{"100.128.0.0", true},
		{"198.17.255.255", true},
		{"198.20.0.0", true},
		{"223.255.255.255", true},
		// IPv4 non-public.
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"10.0.0.1", false},
		{"10.255.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.255", false},
		{"127.0.0.1", false},
		{"127.255.255.254", false},
		{"169.254.169.254", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"192.0.0.8", false},
		{"192.0.2.1", false},
		{"192.88.99.1", false},
		{"192.168.1.1", false},
		{"198.18.0.1", false},
		{"198.19.255.255", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"240.0.0.1", false},
		{"255.255.255.255", false},
		// IPv4-mapped IPv6.
		{"::ffff:8.8.8.8", true},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.1.2.3", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:192.168.0.1", false},
		{"::ffff:100.64.0.1", false},
		{"::ffff:0.0.0.0", false},
		{"::ffff:255.255.255.255", false},
		// IPv4-compatible (deprecated) is outside 2000::/3.
		{"::8.8.8.8", false},
		{"::127.0.0.1", false},
		// IPv6 public.
		{"2606:4700:4700::1111", true},
		{"2001:4860:4860::8888", true},
		{"2a00:1450:4001:80b::200e", true},
		// IPv6 non-public.
		{"::", false},
		{"::1", false},
		{"fc00::1", false},
		{"fd12:3456:789a::1", false},
		{"fe80::1", false},
		{"febf::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"ff0e::1", false},
		{"100::1", false},
		{"2001:db8::1", false},
		{"3fff::1", false},
		{"2001:2::1", false},    // benchmarking
		{"2001:10::1", false},   // ORCHID
		{"4000::1", false},      // unallocated
		{"fe80::1%eth0", false}, // zoned
		// NAT64.
		{"64:ff9b::808:808", true},    // 8.8.8.8
		{"64:ff9b::a00:1", false},     // 10.0.0.1
		{"64:ff9b::7f00:1", false},    // 127.0.0.1
		{"64:ff9b::a9fe:a9fe", false}, // 169.254.169.254
		{"64:ff9b:1::a00:1", false},   // local-use NAT64 prefix
		// 6to4.
		{"2002:808:808::1", true},   // 8.8.8.8
		{"2002:a00:1::1", false},    // 10.0.0.1
		{"2002:7f00:1::1", false},   // 127.0.0.1
		{"2002:c0a8:101::1", false}, // 192.168.1.1
		// Teredo: server 65.54.227.120, client bit-inverted.
		{"2001:0:4136:e378:8000:63bf:f7f7:f7f7", true},  // client 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:f5ff:fffe", false}, // client 10.0.0.1
		{"2001:0:4136:e378:8000:63bf:80ff:fffe", false}, // client 127.0.0.1
		{"2001:0:a00:1:8000:63bf:f7f7:f7f7", false},     // server 10.0.0.1
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			if got := PublicAddress(ip); got != tt.want {
				t.Errorf("PublicAddress(%s) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
	if PublicAddress(netip.Addr{}) {
		t.Error("PublicAddress(zero Addr) = true, want false")
	}
}
