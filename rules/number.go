package rules

import (
	"math/big"
	"strconv"
)

// number copies the JSON number at c.pos to dst in canonical form.
func (c *canon) number(dst []byte) ([]byte, error) {
	start := c.pos
	neg := c.src[c.pos] == '-'
	if neg {
		c.pos++
	}
	intPart := c.digits()
	if len(intPart) == 0 {
		return dst, c.errorf("invalid number: want a digit")
	}
	if len(intPart) > 1 && intPart[0] == '0' {
		return dst, c.errorAt(start, "invalid number: leading zero")
	}
	var frac, exp []byte
	expNeg := false
	if c.pos < len(c.src) && c.src[c.pos] == '.' {
		c.pos++
		if frac = c.digits(); len(frac) == 0 {
			return dst, c.errorf("invalid number: want a digit after '.'")
		}
	}
	if c.pos < len(c.src) && (c.src[c.pos] == 'e' || c.src[c.pos] == 'E') {
		c.pos++
		if c.pos < len(c.src) && (c.src[c.pos] == '+' || c.src[c.pos] == '-') {
			expNeg = c.src[c.pos] == '-'
			c.pos++
		}
		if exp = c.digits(); len(exp) == 0 {
			return dst, c.errorf("invalid number: want a digit in exponent")
		}
	}
	if frac == nil && exp == nil && len(intPart) <= 21 && !(neg && intPart[0] == '0') {
		return append(dst, c.src[start:c.pos]...), nil // already canonical
	}
	return appendNumber(dst, neg, decimal{intPart, frac}, expNeg, exp), nil
}

func (c *canon) digits() []byte {
	s := c.pos
	for c.pos < len(c.src) && c.src[c.pos] >= '0' && c.src[c.pos] <= '9' {
		c.pos++
	}
	return c.src[s:c.pos]
}

// decimal is the digit string of a number's integer and fraction parts,
// read as one sequence without copying.
type decimal [2][]byte

func (d decimal) len() int { return len(d[0]) + len(d[1]) }

func (d decimal) at(i int) byte {
	if i < len(d[0]) {
		return d[0][i]
	}
	return d[1][i-len(d[0])]
}

func (d decimal) appendRange(dst []byte, from, to int) []byte {
	for i := from; i < to; i++ {
		dst = append(dst, d.at(i))
	}
	return dst
}

// appendNumber writes a number in the RFC 8785 (ECMAScript) notation, but
// applied to its exact decimal value: no rounding to binary64, so large
// integers and long fractions keep every digit. 1.0, 1e0 and 10e-1 all
// become 1; -0 becomes 0; 1e21 becomes 1e+21 and 1e-7 becomes 1e-7.
func appendNumber(dst []byte, neg bool, d decimal, expNeg bool, exp []byte) []byte {
	first, last := -1, -1
	for i := 0; i < d.len(); i++ {
		if d.at(i) != '0' {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return append(dst, '0')
	}
	if neg {
		dst = append(dst, '-')
	}
	n := last - first + 1
	// The first significant digit has weight 10^k.
	shift := int64(len(d[0]) - 1 - first)
	k, ok := exponent(expNeg, exp, shift)
	if !ok {
		return appendHugeExponent(dst, d, first, last, expNeg, exp, shift)
	}
	switch {
	case k < -6 || k > 20:
		dst = appendMantissa(dst, d, first, last)
		dst = append(dst, 'e')
		if k >= 0 {
			dst = append(dst, '+')
		}
		return strconv.AppendInt(dst, k, 10)
	case k >= int64(n-1):
		dst = d.appendRange(dst, first, last+1)
		for range k - int64(n-1) {
			dst = append(dst, '0')
		}
		return dst
	case k >= 0:
		dst = d.appendRange(dst, first, first+int(k)+1)
		dst = append(dst, '.')
		return d.appendRange(dst, first+int(k)+1, last+1)
	}
	dst = append(dst, '0', '.')
	for range -k - 1 {
		dst = append(dst, '0')
	}
	return d.appendRange(dst, first, last+1)
}

// appendMantissa writes d.ddd of the significant digits.
func appendMantissa(dst []byte, d decimal, first, last int) []byte {
	dst = append(dst, d.at(first))
	if last > first {
		dst = append(dst, '.')
		dst = d.appendRange(dst, first+1, last+1)
	}
	return dst
}

// exponent returns ±exp + shift, or false when exp is too long for int64
// arithmetic.
func exponent(neg bool, exp []byte, shift int64) (int64, bool) {
	for len(exp) > 1 && exp[0] == '0' {
		exp = exp[1:]
	}
	if len(exp) > 15 {
		return 0, false
	}
	var e int64
	for _, b := range exp {
		e = e*10 + int64(b-'0')
	}
	if neg {
		e = -e
	}
	return e + shift, true
}

// appendHugeExponent handles exponents beyond int64, which only absurd
// input has; they keep their exact value all the same.
func appendHugeExponent(dst []byte, d decimal, first, last int, neg bool, exp []byte, shift int64) []byte {
	e, _ := new(big.Int).SetString(string(exp), 10)
	if neg {
		e.Neg(e)
	}
	e.Add(e, big.NewInt(shift))
	dst = appendMantissa(dst, d, first, last)
	dst = append(dst, 'e')
	if e.Sign() >= 0 {
		dst = append(dst, '+')
	}
	return e.Append(dst, 10)
}
