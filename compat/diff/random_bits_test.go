package diff

import "strconv"

// ---- bits (engine/cmd_bits.go), for TestRandomDiffWide ----
//
// Offsets stay small, so strings stay small: a valid offset past a few
// hundred bits is only ever read (GETBIT, BITFIELD GET), never written,
// since a write there makes the string that long (512 MB at the limit).

// bitOff is a bit offset: mostly small, now and then invalid or huge.
func (g *wideGen) bitOff(write bool) string {
	if g.chance(0.92) {
		return strconv.Itoa(g.r.IntN(120))
	}
	if !write && g.chance(0.3) {
		return g.pick("4294967295", "100000", "8388607")
	}
	return g.pick("-1", "abc", "", "1.5", "4294967296", "9223372036854775807", "#3", " 1", "01")
}

// byteOff is SETRANGE's byte offset.
func (g *wideGen) byteOff() string {
	if g.chance(0.85) {
		return strconv.Itoa(g.r.IntN(20))
	}
	return g.pick("-1", "abc", "", "536870912", "9223372036854775807", "-9223372036854775808")
}

// bfType is a BITFIELD type, sometimes invalid.
func (g *wideGen) bfType() string {
	if g.chance(0.96) {
		return g.pick("u1", "u2", "u5", "u8", "u16", "u63", "i1", "i3", "i8", "i16", "i32", "i64")
	}
	return g.pick("u64", "i65", "u0", "x8", "U8", "", "i")
}

// bfValue is a BITFIELD SET value or INCRBY increment.
func (g *wideGen) bfValue() string {
	if g.chance(0.7) {
		return g.pick("0", "1", "-1", "3", "100", "127", "128", "-128", "-129", "255", "256", "1000", "-1000")
	}
	return g.pick("9223372036854775807", "-9223372036854775808", "4611686018427387904", "abc", "")
}

func (g *wideGen) bitCmd() wstep {
	k := g.typedKey('s')
	var args []string
	switch n := g.r.IntN(24); {
	case n < 3:
		bit := g.pick("0", "1", "1", "0", "0", "1", "1", "0", "2", "-1", "x")
		args = []string{g.kw("SETBIT"), k, g.bitOff(true), bit}
	case n < 5:
		args = []string{g.kw("GETBIT"), k, g.bitOff(false)}
	case n < 7:
		args = []string{g.kw("SETRANGE"), k, g.byteOff(), g.pick(g.val(), "", "ab", "\x00\xff")}
	case n < 10:
		args = []string{g.kw("BITCOUNT"), k}
		if g.chance(0.7) {
			args = append(args, g.intArg(), g.intArg())
			if g.chance(0.5) {
				args = append(args, g.kw(g.pick("BIT", "BYTE", "BIT", "BITS")))
			}
		} else if g.chance(0.2) {
			args = append(args, g.intArg())
		}
	case n < 13:
		args = []string{g.kw("BITPOS"), k, g.pick("0", "1", "0", "1", "0", "1", "2", "-1")}
		for i := g.r.IntN(4); i > 0 && len(args) < 6; i-- {
			if len(args) == 5 {
				args = append(args, g.kw(g.pick("BIT", "BYTE", "BIT", "BOT")))
			} else {
				args = append(args, g.intArg())
			}
		}
	case n < 15:
		op := g.pick("AND", "OR", "XOR", "NOT", "NOT", "NAND")
		args = []string{g.kw("BITOP"), g.kw(op), g.typedKey('s')}
		srcs := 1
		if op != "NOT" || g.chance(0.1) {
			srcs += g.r.IntN(3)
		}
		for i := 0; i < srcs; i++ {
			args = append(args, g.typedKey('s'))
		}
	case n < 20:
		args = []string{g.kw("BITFIELD"), k}
		args = g.bfOps(args, true)
	case n < 21:
		args = []string{g.kw("BITFIELD_RO"), k}
		args = g.bfOps(args, g.chance(0.15))
	default:
		args = []string{g.kw("LCS"), k, g.typedKey('s')}
		for i := g.r.IntN(3); i > 0; i-- {
			switch o := g.pick("IDX", "IDX", "LEN", "WITHMATCHLEN", "MINMATCHLEN", "FOO"); o {
			case "MINMATCHLEN":
				args = append(args, g.kw(o), g.pick("0", "1", "2", "3", "-1", "x"))
			default:
				args = append(args, g.kw(o))
			}
		}
	}
	return wstep{args: args}
}

// bfOps appends one to four BITFIELD operations (GET only unless writes)
// with OVERFLOW now and then.
func (g *wideGen) bfOps(args []string, writes bool) []string {
	for i := 1 + g.r.IntN(4); i > 0; i-- {
		if g.chance(0.25) {
			args = append(args, g.kw("OVERFLOW"), g.kw(g.pick("WRAP", "SAT", "FAIL", "FAIL", "BOUNCE")))
		}
		op := g.pick("GET", "SET", "INCRBY", "INCRBY")
		if !writes {
			op = "GET"
		}
		off := g.bitOff(op != "GET")
		if g.chance(0.15) {
			off = "#" + strconv.Itoa(g.r.IntN(8))
		}
		if op == "GET" {
			args = append(args, g.kw(op), g.bfType(), off)
		} else {
			args = append(args, g.kw(op), g.bfType(), off, g.bfValue())
		}
	}
	if g.chance(0.03) {
		args = append(args, g.pick("GET", "FOO", "SET"))
	}
	return args
}
