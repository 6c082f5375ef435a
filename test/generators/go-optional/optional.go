// Package optional supplies the import path github.com/antihax/optional that OpenAPI Generator
// 4.3.1's go client imports for its optional parameters (`optional.NewInt32(2)`, `opts.Page.IsSet()`,
// `opts.Page.Value()`). Debian does not package that module and the test has no module proxy, so
// test/generators/cells.ts puts this package, written for Windsock's test, at that path in the go
// cell's GOPATH: an environment dependency, the generated client is not edited.
//
// Each type holds a value and whether it was set; the zero value is unset.
package optional

import "time"


// Bool is an optional bool.
type Bool struct {
	isSet bool
	value bool
}

// NewBool returns a set Bool holding v.
func NewBool(v bool) Bool { return Bool{isSet: true, value: v} }

// EmptyBool returns an unset Bool.
func EmptyBool() Bool { return Bool{} }

// IsSet says whether a value was set.
func (o Bool) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Bool) Value() bool { return o.value }

// Byte is an optional byte.
type Byte struct {
	isSet bool
	value byte
}

// NewByte returns a set Byte holding v.
func NewByte(v byte) Byte { return Byte{isSet: true, value: v} }

// EmptyByte returns an unset Byte.
func EmptyByte() Byte { return Byte{} }

// IsSet says whether a value was set.
func (o Byte) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Byte) Value() byte { return o.value }

// Complex64 is an optional complex64.
type Complex64 struct {
	isSet bool
	value complex64
}

// NewComplex64 returns a set Complex64 holding v.
func NewComplex64(v complex64) Complex64 { return Complex64{isSet: true, value: v} }

// EmptyComplex64 returns an unset Complex64.
func EmptyComplex64() Complex64 { return Complex64{} }

// IsSet says whether a value was set.
func (o Complex64) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Complex64) Value() complex64 { return o.value }

// Complex128 is an optional complex128.
type Complex128 struct {
	isSet bool
	value complex128
}

// NewComplex128 returns a set Complex128 holding v.
func NewComplex128(v complex128) Complex128 { return Complex128{isSet: true, value: v} }

// EmptyComplex128 returns an unset Complex128.
func EmptyComplex128() Complex128 { return Complex128{} }

// IsSet says whether a value was set.
func (o Complex128) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Complex128) Value() complex128 { return o.value }

// Float32 is an optional float32.
type Float32 struct {
	isSet bool
	value float32
}

// NewFloat32 returns a set Float32 holding v.
func NewFloat32(v float32) Float32 { return Float32{isSet: true, value: v} }

// EmptyFloat32 returns an unset Float32.
func EmptyFloat32() Float32 { return Float32{} }

// IsSet says whether a value was set.
func (o Float32) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Float32) Value() float32 { return o.value }

// Float64 is an optional float64.
type Float64 struct {
	isSet bool
	value float64
}

// NewFloat64 returns a set Float64 holding v.
func NewFloat64(v float64) Float64 { return Float64{isSet: true, value: v} }

// EmptyFloat64 returns an unset Float64.
func EmptyFloat64() Float64 { return Float64{} }

// IsSet says whether a value was set.
func (o Float64) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Float64) Value() float64 { return o.value }

// Int is an optional int.
type Int struct {
	isSet bool
	value int
}

// NewInt returns a set Int holding v.
func NewInt(v int) Int { return Int{isSet: true, value: v} }

// EmptyInt returns an unset Int.
func EmptyInt() Int { return Int{} }

// IsSet says whether a value was set.
func (o Int) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Int) Value() int { return o.value }

// Int8 is an optional int8.
type Int8 struct {
	isSet bool
	value int8
}

// NewInt8 returns a set Int8 holding v.
func NewInt8(v int8) Int8 { return Int8{isSet: true, value: v} }

// EmptyInt8 returns an unset Int8.
func EmptyInt8() Int8 { return Int8{} }

// IsSet says whether a value was set.
func (o Int8) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Int8) Value() int8 { return o.value }

// Int16 is an optional int16.
type Int16 struct {
	isSet bool
	value int16
}

// NewInt16 returns a set Int16 holding v.
func NewInt16(v int16) Int16 { return Int16{isSet: true, value: v} }

// EmptyInt16 returns an unset Int16.
func EmptyInt16() Int16 { return Int16{} }

// IsSet says whether a value was set.
func (o Int16) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Int16) Value() int16 { return o.value }

// Int32 is an optional int32.
type Int32 struct {
	isSet bool
	value int32
}

// NewInt32 returns a set Int32 holding v.
func NewInt32(v int32) Int32 { return Int32{isSet: true, value: v} }

// EmptyInt32 returns an unset Int32.
func EmptyInt32() Int32 { return Int32{} }

// IsSet says whether a value was set.
func (o Int32) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Int32) Value() int32 { return o.value }

// Int64 is an optional int64.
type Int64 struct {
	isSet bool
	value int64
}

// NewInt64 returns a set Int64 holding v.
func NewInt64(v int64) Int64 { return Int64{isSet: true, value: v} }

// EmptyInt64 returns an unset Int64.
func EmptyInt64() Int64 { return Int64{} }

// IsSet says whether a value was set.
func (o Int64) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Int64) Value() int64 { return o.value }

// Interface is an optional interface{}.
type Interface struct {
	isSet bool
	value interface{}
}

// NewInterface returns a set Interface holding v.
func NewInterface(v interface{}) Interface { return Interface{isSet: true, value: v} }

// EmptyInterface returns an unset Interface.
func EmptyInterface() Interface { return Interface{} }

// IsSet says whether a value was set.
func (o Interface) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Interface) Value() interface{} { return o.value }

// Rune is an optional rune.
type Rune struct {
	isSet bool
	value rune
}

// NewRune returns a set Rune holding v.
func NewRune(v rune) Rune { return Rune{isSet: true, value: v} }

// EmptyRune returns an unset Rune.
func EmptyRune() Rune { return Rune{} }

// IsSet says whether a value was set.
func (o Rune) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Rune) Value() rune { return o.value }

// String is an optional string.
type String struct {
	isSet bool
	value string
}

// NewString returns a set String holding v.
func NewString(v string) String { return String{isSet: true, value: v} }

// EmptyString returns an unset String.
func EmptyString() String { return String{} }

// IsSet says whether a value was set.
func (o String) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o String) Value() string { return o.value }

// Time is an optional time.Time.
type Time struct {
	isSet bool
	value time.Time
}

// NewTime returns a set Time holding v.
func NewTime(v time.Time) Time { return Time{isSet: true, value: v} }

// EmptyTime returns an unset Time.
func EmptyTime() Time { return Time{} }

// IsSet says whether a value was set.
func (o Time) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Time) Value() time.Time { return o.value }

// Uint is an optional uint.
type Uint struct {
	isSet bool
	value uint
}

// NewUint returns a set Uint holding v.
func NewUint(v uint) Uint { return Uint{isSet: true, value: v} }

// EmptyUint returns an unset Uint.
func EmptyUint() Uint { return Uint{} }

// IsSet says whether a value was set.
func (o Uint) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uint) Value() uint { return o.value }

// Uint8 is an optional uint8.
type Uint8 struct {
	isSet bool
	value uint8
}

// NewUint8 returns a set Uint8 holding v.
func NewUint8(v uint8) Uint8 { return Uint8{isSet: true, value: v} }

// EmptyUint8 returns an unset Uint8.
func EmptyUint8() Uint8 { return Uint8{} }

// IsSet says whether a value was set.
func (o Uint8) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uint8) Value() uint8 { return o.value }

// Uint16 is an optional uint16.
type Uint16 struct {
	isSet bool
	value uint16
}

// NewUint16 returns a set Uint16 holding v.
func NewUint16(v uint16) Uint16 { return Uint16{isSet: true, value: v} }

// EmptyUint16 returns an unset Uint16.
func EmptyUint16() Uint16 { return Uint16{} }

// IsSet says whether a value was set.
func (o Uint16) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uint16) Value() uint16 { return o.value }

// Uint32 is an optional uint32.
type Uint32 struct {
	isSet bool
	value uint32
}

// NewUint32 returns a set Uint32 holding v.
func NewUint32(v uint32) Uint32 { return Uint32{isSet: true, value: v} }

// EmptyUint32 returns an unset Uint32.
func EmptyUint32() Uint32 { return Uint32{} }

// IsSet says whether a value was set.
func (o Uint32) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uint32) Value() uint32 { return o.value }

// Uint64 is an optional uint64.
type Uint64 struct {
	isSet bool
	value uint64
}

// NewUint64 returns a set Uint64 holding v.
func NewUint64(v uint64) Uint64 { return Uint64{isSet: true, value: v} }

// EmptyUint64 returns an unset Uint64.
func EmptyUint64() Uint64 { return Uint64{} }

// IsSet says whether a value was set.
func (o Uint64) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uint64) Value() uint64 { return o.value }

// Uintptr is an optional uintptr.
type Uintptr struct {
	isSet bool
	value uintptr
}

// NewUintptr returns a set Uintptr holding v.
func NewUintptr(v uintptr) Uintptr { return Uintptr{isSet: true, value: v} }

// EmptyUintptr returns an unset Uintptr.
func EmptyUintptr() Uintptr { return Uintptr{} }

// IsSet says whether a value was set.
func (o Uintptr) IsSet() bool { return o.isSet }

// Value returns the value (the zero value when unset).
func (o Uintptr) Value() uintptr { return o.value }
