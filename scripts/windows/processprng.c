/*
 * Test-only: a bcryptprimitives.dll for Wine 8, which lacks it.
 *
 * Rust's standard library (1.78 and later) takes its random bytes from
 * ProcessPrng in bcryptprimitives.dll, which Windows 10 and later have and
 * Wine 8 does not: without it no Rust program for Windows starts under
 * Wine 8. This DLL exports ProcessPrng and answers it with RtlGenRandom
 * (SystemFunction036 in advapi32), which Wine has. It is built and put in a
 * throw-away Wine prefix by scripts/windows/wine-run; it is never shipped,
 * and a real Windows has the real one.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG n = length > 0x40000000 ? 0x40000000 : (ULONG)length;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        length -= n;
    }
    return TRUE;
}
