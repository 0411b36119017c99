package engine

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// LOLWUT, as Redis 7.0's lolwut.c, lolwut5.c and lolwut6.c: a server of
// version 7 answers with its version alone; VERSION 5 draws Georg Nees's
// Schotter in braille, VERSION 6 a skyline in terminal colours. Both
// drawings are random where Redis's are (rand()), with the same shapes.

func registerLolwut(e *Engine) {
	e.Register(&Command{Name: "lolwut", Arity: -1, Flags: FlagReadonly | FlagFast | FlagNoKeys, Group: "server", Fn: cmdLolwut})
}

// LOLWUT [VERSION version] [version-specific arguments...]
func cmdLolwut(c *Ctx) {
	v := Version
	args := c.Args
	if len(args) >= 3 && EqFold(args[1], "version") {
		ver, ok := parseLong(c, args[2])
		if !ok {
			return
		}
		// snprintf("%u.0.0", (unsigned int)ver)
		v = strconv.FormatUint(uint64(uint32(ver)), 10) + ".0.0"
		args = append([][]byte{args[0]}, args[3:]...)
	}
	switch {
	case v[0] == '5' && v[1] == '.' && v[2] != '9', v[0] == '4' && v[1] == '.' && v[2] == '9':
		lolwut5(c, args)
	case v[0] == '6' && v[1] == '.' && v[2] != '9', v[0] == '5' && v[1] == '.' && v[2] == '9':
		lolwut6(c, args)
	default:
		c.W.WriteVerbatim("txt", "Redis ver. "+Version+"\n")
	}
}

// lolwutArgs parses the optional numeric arguments into dst, in order,
// and clamps each to [1, max[i]], as the versions' commands do.
func lolwutArgs(c *Ctx, args [][]byte, dst, hi []int64) bool {
	for i := range dst {
		if len(args) > i+1 {
			n, ok := parseLong(c, args[i+1])
			if !ok {
				return false
			}
			dst[i] = n
		}
	}
	for i := range dst {
		dst[i] = max(1, min(hi[i], dst[i]))
	}
	return true
}

// lwCanvas is lolwut.c's canvas: one byte a pixel.
type lwCanvas struct {
	width, height int
	pixels        []byte
}

func newCanvas(width, height int, bg byte) *lwCanvas {
	cv := &lwCanvas{width: width, height: height, pixels: make([]byte, width*height)}
	if bg != 0 {
		for i := range cv.pixels {
			cv.pixels[i] = bg
		}
	}
	return cv
}

func (cv *lwCanvas) set(x, y int, color byte) {
	if x < 0 || x >= cv.width || y < 0 || y >= cv.height {
		return
	}
	cv.pixels[x+y*cv.width] = color
}

func (cv *lwCanvas) get(x, y int) byte {
	if x < 0 || x >= cv.width || y < 0 || y >= cv.height {
		return 0
	}
	return cv.pixels[x+y*cv.width]
}

// line draws with Bresenham's algorithm (lwDrawLine).
func (cv *lwCanvas) line(x1, y1, x2, y2 int, color byte) {
	dx, dy := abs(x2-x1), abs(y2-y1)
	sx, sy := -1, -1
	if x1 < x2 {
		sx = 1
	}
	if y1 < y2 {
		sy = 1
	}
	err := dx - dy
	for {
		cv.set(x1, y1, color)
		if x1 == x2 && y1 == y2 {
			return
		}
		e2 := err * 2
		if e2 > -dy {
			err -= dy
			x1 += sx
		}
		if e2 < dx {
			err += dx
			y1 += sy
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// square draws a square centred at x,y, rotated by angle (lwDrawSquare:
// its arithmetic is C's, float variables with double constants).
func (cv *lwCanvas) square(x, y int, size, angle float32, color byte) {
	var px, py [4]int
	size = float32(float64(size) / 1.4142135623)
	size = float32(math.Round(float64(size)))
	k := float32(math.Pi/4 + float64(angle))
	for j := range 4 {
		px[j] = int(math.Round(math.Sin(float64(k))*float64(size) + float64(x)))
		py[j] = int(math.Round(math.Cos(float64(k))*float64(size) + float64(y)))
		k = float32(float64(k) + math.Pi/2)
	}
	for j := range 4 {
		cv.line(px[j], py[j], px[(j+1)%4], py[(j+1)%4], color)
	}
}

// cRand is C's rand(): 0 to RAND_MAX.
func cRand() int { return int(rand.Int32()) }

const randMax = math.MaxInt32

// LOLWUT VERSION 5 [columns] [squares-per-row] [squares-per-col]
func lolwut5(c *Ctx, args [][]byte) {
	p := []int64{66, 8, 12}
	if !lolwutArgs(c, args, p, []int64{1000, 200, 200}) {
		return
	}
	cv := schotter(int(p[0]), int(p[1]), int(p[2]))
	var sb strings.Builder
	for y := 0; y < cv.height; y += 4 {
		for x := 0; x < cv.width; x += 2 {
			b := 0
			for _, d := range [8]struct{ dx, dy, bit int }{
				{0, 0, 0}, {0, 1, 1}, {0, 2, 2}, {1, 0, 3}, {1, 1, 4}, {1, 2, 5}, {0, 3, 6}, {1, 3, 7},
			} {
				if cv.get(x+d.dx, y+d.dy) != 0 {
					b |= 1 << d.bit
				}
			}
			sb.WriteRune(rune(0x2800 + b))
		}
		if y != cv.height-1 {
			sb.WriteByte('\n')
		}
	}
	sb.WriteString("\nGeorg Nees - schotter, plotter on paper, 1968. Redis ver. " + Version + "\n")
	c.W.WriteVerbatim("txt", sb.String())
}

// schotter is lwDrawSchotter.
func schotter(cols, perRow, perCol int) *lwCanvas {
	width := cols * 2
	padding := 0
	if width > 4 {
		padding = 2
	}
	side := float32(width-padding*2) / float32(perRow)
	height := int(side*float32(perCol) + float32(padding*2))
	cv := newCanvas(width, height, 0)
	for y := range perCol {
		for x := range perRow {
			sx := int(float32(x)*side + side/2 + float32(padding))
			sy := int(float32(y)*side + side/2 + float32(padding))
			var angle float32
			if y > 1 {
				r := func() float32 { return float32(cRand()) / float32(randMax) / float32(perCol) * float32(y) }
				r1, r2, r3 := r(), r(), r()
				if cRand()%2 != 0 {
					r1 = -r1
				}
				if cRand()%2 != 0 {
					r2 = -r2
				}
				if cRand()%2 != 0 {
					r3 = -r3
				}
				angle = r1
				sx = int(float32(sx) + r2*side/3)
				sy = int(float32(sy) + r3*side/3)
			}
			cv.square(sx, sy, side, angle, 1)
		}
	}
	return cv
}

// LOLWUT VERSION 6 [columns] [rows]
func lolwut6(c *Ctx, args [][]byte) {
	p := []int64{80, 20}
	if !lolwutArgs(c, args, p, []int64{1000, 1000}) {
		return
	}
	cv := newCanvas(int(p[0]), int(p[1]), 3)
	skyline(cv)
	var sb strings.Builder
	for y := range cv.height {
		for x := range cv.width {
			ce := "0;30;40m" // black
			switch cv.get(x, y) {
			case 1:
				ce = "0;90;100m" // gray 1
			case 2:
				ce = "0;37;47m" // gray 2
			case 3:
				ce = "0;97;107m" // white
			}
			sb.WriteString("\033[" + ce + " \033[0m")
		}
		if y != cv.height-1 {
			sb.WriteByte('\n')
		}
	}
	sb.WriteString("\nDedicated to the 8 bit game developers of past and present.\n" +
		"Original 8 bit image from Plaguemon by hikikomori. Redis ver. " + Version + "\n")
	c.W.WriteVerbatim("txt", sb.String())
}

type skyscraper struct {
	xoff, width, height int
	windows             bool
	color               byte
}

// skyscraper draws one (generateSkyscraper).
func (cv *lwCanvas) skyscraper(si skyscraper) {
	starty := cv.height - 1
	endy := starty - si.height + 1
	for y := starty; y >= endy; y-- {
		for x := si.xoff; x < si.xoff+si.width; x++ {
			if y == endy && (x <= si.xoff+1 || x >= si.xoff+si.width-2) {
				continue // the roof is four pixels narrower
			}
			color := si.color
			if si.windows && x > si.xoff+1 && x < si.xoff+si.width-2 && y > endy+1 && y < starty-1 {
				relx, rely := x-(si.xoff+1), y-(endy+1)
				if relx/2%2 != 0 && rely%2 != 0 {
					for {
						color = byte(1 + cRand()%2)
						if color != si.color {
							break
						}
					}
					if relx%2 != 0 {
						color = cv.get(x-1, y)
					}
				}
			}
			cv.set(x, y, color)
		}
	}
}

// skyline is generateSkyline: two grays of background, then the black
// foreground with windows.
func skyline(cv *lwCanvas) {
	for color := byte(2); color >= 1; color-- {
		for offset := -10; offset < cv.width; {
			offset += cRand() % 8
			si := skyscraper{xoff: offset, width: 10 + cRand()%9, color: color}
			if color == 2 {
				si.height = cv.height/2 + cRand()%cv.height/2
			} else {
				si.height = cv.height/2 + cRand()%cv.height/3
			}
			cv.skyscraper(si)
			if color == 2 {
				offset += si.width / 2
			} else {
				offset += si.width + 1
			}
		}
	}
	for offset := -10; offset < cv.width; {
		offset += cRand() % 8
		si := skyscraper{xoff: offset, width: 5 + cRand()%14, windows: true}
		if si.width%4 != 0 {
			si.width += si.width % 3
		}
		si.height = cv.height/3 + cRand()%cv.height/2
		cv.skyscraper(si)
		offset += si.width + 5
	}
}
