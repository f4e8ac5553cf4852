000000000000d290 <void mq::kdetail::(anonymous namespace)::group_steps<mq::kdetail::Vnni16, 4, 1, 8, false, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>(mq::kdetail::Vnni16::I*, mq::kdetail::Vnni16::I*, unsigned char const* const*, signed char const* const*, long, long, std::integer_sequence<unsigned long, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>)>:
push   %r15
push   %r14
push   %r12
push   %rbx
vmovdqa64 0x1c0(%rdi),%zmm0
vmovdqa64 0x180(%rdi),%zmm1
vmovdqa64 0x140(%rdi),%zmm2
vmovdqa64 0x100(%rdi),%zmm3
vmovdqa64 (%rdi),%zmm4
vmovdqa64 0x40(%rdi),%zmm5
vmovdqa64 0x80(%rdi),%zmm7
vmovdqa64 0xc0(%rdi),%zmm6
test   %r8,%r8
jle    d3b5 <void mq::kdetail::(anonymous namespace)::group_steps<mq::kdetail::Vnni16, 4, 1, 8, false, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>(mq::kdetail::Vnni16::I*, mq::kdetail::Vnni16::I*, unsigned char const* const*, signed char const* const*, long, long, std::integer_sequence<unsigned long, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>)+0x125>
mov    (%rcx),%r10
mov    0x8(%rcx),%r11
mov    0x10(%rcx),%r14
mov    0x18(%rcx),%r15
mov    0x20(%rcx),%r12
mov    0x28(%rcx),%rax
mov    0x30(%rcx),%rsi
mov    $0x800,%ebx
add    (%rdx),%rbx
mov    0x38(%rcx),%rcx
xor    %edx,%edx
vpbroadcastd 0x0(%rip),%zmm8        # d30a <void mq::kdetail::(anonymous namespace)::group_steps<mq::kdetail::Vnni16, 4, 1, 8, false, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>(mq::kdetail::Vnni16::I*, mq::kdetail::Vnni16::I*, unsigned char const* const*, signed char const* const*, long, long, std::integer_sequence<unsigned long, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>)+0x7a>
nopw   0x0(%rax,%rax,1)
prefetcht0 (%rbx)
vmovdqa64 -0x800(%rbx),%zmm9
vpandd %zmm8,%zmm9,%zmm10
vpdpbusd (%r10,%rdx,8){1to16},%zmm10,%zmm4
vpdpbusd (%r11,%rdx,8){1to16},%zmm10,%zmm5
vpdpbusd (%r14,%rdx,8){1to16},%zmm10,%zmm7
vpdpbusd (%r15,%rdx,8){1to16},%zmm10,%zmm6
vpdpbusd (%r12,%rdx,8){1to16},%zmm10,%zmm3
vpdpbusd (%rax,%rdx,8){1to16},%zmm10,%zmm2
vpdpbusd (%rsi,%rdx,8){1to16},%zmm10,%zmm1
vpsrlw $0x4,%zmm9,%zmm9
vpdpbusd (%rcx,%rdx,8){1to16},%zmm10,%zmm0
vpandd %zmm8,%zmm9,%zmm9
vpdpbusd 0x4(%r10,%rdx,8){1to16},%zmm9,%zmm4
vpdpbusd 0x4(%r11,%rdx,8){1to16},%zmm9,%zmm5
vpdpbusd 0x4(%r14,%rdx,8){1to16},%zmm9,%zmm7
vpdpbusd 0x4(%r15,%rdx,8){1to16},%zmm9,%zmm6
vpdpbusd 0x4(%r12,%rdx,8){1to16},%zmm9,%zmm3
vpdpbusd 0x4(%rax,%rdx,8){1to16},%zmm9,%zmm2
vpdpbusd 0x4(%rsi,%rdx,8){1to16},%zmm9,%zmm1
vpdpbusd 0x4(%rcx,%rdx,8){1to16},%zmm9,%zmm0
add    $0x1,%rdx
add    %r9,%rbx
cmp    %rdx,%r8
jne    d310 <void mq::kdetail::(anonymous namespace)::group_steps<mq::kdetail::Vnni16, 4, 1, 8, false, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>(mq::kdetail::Vnni16::I*, mq::kdetail::Vnni16::I*, unsigned char const* const*, signed char const* const*, long, long, std::integer_sequence<unsigned long, 0ul, 1ul, 2ul, 3ul, 4ul, 5ul, 6ul, 7ul>)+0x80>
vmovdqa64 %zmm4,(%rdi)
vmovdqa64 %zmm5,0x40(%rdi)
vmovdqa64 %zmm7,0x80(%rdi)
vmovdqa64 %zmm6,0xc0(%rdi)
vmovdqa64 %zmm3,0x100(%rdi)
vmovdqa64 %zmm2,0x140(%rdi)
vmovdqa64 %zmm1,0x180(%rdi)
vmovdqa64 %zmm0,0x1c0(%rdi)
pop    %rbx
pop    %r12
pop    %r14
pop    %r15
vzeroupper
ret
nopw   0x0(%rax,%rax,1)

