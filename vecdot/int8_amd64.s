#include "textflag.h"

// func dotInt8AVX2(a, b []int8) int32
//
// Sixteen bytes of each are widened to int16, multiplied and summed in
// pairs into eight int32 lanes (VPMADDWD); two accumulators, then blocks
// of sixteen, then single bytes.
TEXT ·dotInt8AVX2(SB), NOSPLIT, $0-52
	MOVQ  a_base+0(FP), SI
	MOVQ  a_len+8(FP), CX
	MOVQ  b_base+24(FP), DI
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1

loop32:
	CMPQ      CX, $32
	JLT       loop16
	VPMOVSXBW 0(SI), Y2
	VPMOVSXBW 0(DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	VPMOVSXBW 16(SI), Y4
	VPMOVSXBW 16(DI), Y5
	VPMADDWD  Y5, Y4, Y4
	VPADDD    Y4, Y1, Y1
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $32, CX
	JMP       loop32

loop16:
	CMPQ      CX, $16
	JLT       reduce
	VPMOVSXBW 0(SI), Y2
	VPMOVSXBW 0(DI), Y3
	VPMADDWD  Y3, Y2, Y2
	VPADDD    Y2, Y0, Y0
	ADDQ      $16, SI
	ADDQ      $16, DI
	SUBQ      $16, CX

reduce:
	VPADDD       Y1, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0x4E, X0, X1
	VPADDD       X1, X0, X0
	VPSHUFD      $0xB1, X0, X1
	VPADDD       X1, X0, X0
	VMOVD        X0, AX

singles:
	CMPQ    CX, $0
	JE      done
	MOVBQSX 0(SI), R8
	MOVBQSX 0(DI), R9
	IMULQ   R9, R8
	ADDL    R8, AX
	INCQ    SI
	INCQ    DI
	DECQ    CX
	JMP     singles

done:
	VZEROUPPER
	MOVL AX, ret+48(FP)
	RET
