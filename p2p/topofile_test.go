// SPDX-License-Identifier: MIT

package p2p

import (
	"errors"
	"strings"
	"testing"
)

const goodTopology = `{
  "format": "efap2p-topology",
  "version": 2,
  "machine": {"kernel": "6.8.0", "functions": [{"addr": "0000:53:00.0", "id": "10de:2330"}]},
  "nics": [{"addr": "0000:4f:00.0", "peer_access_blocked": true}],
  "accelerators": [],
  "pairs": [
    {"provider": "0000:53:00.0", "client": "0000:4f:00.0", "map_type": "BUS_ADDR", "distance": 4, "path": "PIX", "outcome": "p2p"},
    {"provider": "0000:53:00.0", "client": "0000:50:00.0", "map_type": "BUS_ADDR", "distance": 4, "path": "PIX", "outcome": "p2p"}
  ]
}
`

func TestParseTopologyFile(t *testing.T) {
	tf, err := ParseTopologyFile([]byte(goodTopology), "t.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(tf.Pairs) != 2 || !tf.NICs[0].PeerAccessBlocked {
		t.Fatalf("got %+v", tf)
	}
	tests := []struct {
		name, data, want string
	}{
		{"syntax", strings.Replace(goodTopology, `"version": 2,`, `"version": 2`, 1), "t.json:4:"},
		{"unknown field", strings.Replace(goodTopology, `"version": 2,`, `"version": 2, "colour": 2,`, 1), "t.json:3:"},
		{"version", strings.Replace(goodTopology, `"version": 2`, `"version": 7`, 1), "t.json:1: version 7 is not supported"},
		{"version 1", strings.Replace(goodTopology, `"version": 2`, `"version": 1`, 1), "write a new one with `efap2p export`"},
		{"bad id", strings.Replace(goodTopology, `10de:2330`, `nvidia`, 1), "t.json:4: machine.functions[0]: id \"nvidia\""},
		{"format", strings.Replace(goodTopology, `efap2p-topology`, `nccl`, 1), `format "nccl"`},
		{"bad address", strings.Replace(goodTopology, `"0000:50:00.0"`, `"0000:50:00"`, 1), "t.json:9:"},
		{"bad map type", strings.Replace(goodTopology, `"PIX", "outcome": "p2p"}
  ]`, `"PIX", "outcome": "p2p", "map_type": "MAYBE"}
  ]`, 1), "MAYBE"},
		{"missing outcome", strings.Replace(goodTopology, `"path": "PIX", "outcome": "p2p"},`, `"path": "PIX"},`, 1), "t.json:8: pairs[0]: outcome is missing"},
		{"duplicate", strings.Replace(goodTopology, `"0000:50:00.0"`, `"0000:4f:00.0"`, 1), "t.json:9: pairs[1]: 0000:53:00.0 -> 0000:4f:00.0 listed twice"},
		{"trailing", goodTopology + "{}", "data after"},
		{"empty", "", "t.json:1:"},
	}
	for _, tt := range tests {
		_, err := ParseTopologyFile([]byte(tt.data), "t.json")
		if !errors.Is(err, ErrTopologyFile) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v; want one containing %q", tt.name, err, tt.want)
		}
	}
}

func FuzzParseTopologyFile(f *testing.F) {
	f.Add([]byte(goodTopology))
	f.Add([]byte(`{"format":"efap2p-topology","version":2,"machine":{"functions":[{"addr":"0000:00:00.0","id":"8086:0000"}]},"pairs":[{}]}`))
	f.Add([]byte(`{"format":"efap2p-topology","version":3,"machine":{"functions":[{"addr":"0000:00:00.0","id":"8086:0000"}]},` +
		`"pairs":[[0,"0000:01:00.0","BUS_ADDR",2,"PIX","kernel","p2p",1,2,[0],0],[0,0,"NOT_SUPPORTED",0,"LOC","unknown","refused",0,0,[],"why"]],"reasons":["r\u00e9"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tf, err := ParseTopologyFile(data, "fuzz")
		if err != nil {
			if !errors.Is(err, ErrTopologyFile) {
				t.Fatalf("error does not wrap ErrTopologyFile: %v", err)
			}
			return
		}
		ix := newTopoIndex(tf, "fuzz")
		for i := range tf.Pairs {
			if v := ix.verdict(&tf.Pairs[i], true); v.Source != SourceTopologyFile {
				t.Fatal("source")
			}
		}
	})
}
