# bench/bank_model.py L1-60|L1-66|L1-54: shared-memory wavefronts per A load of the tensor-core k-loop
# (one LDS.32 a warp: lanes (g, t) read patch[row offset of position g + K offset of k = t or t + 4]),
# against the ideal 1, for the pitch the plan picks and each pitch of the next 32 columns.
# A model of tc_core.cuh's staging and K table (bench/NOTES.md, sixth session): it reproduced ncu's
# ratio for L1-60 tf32 (1.34 against 1.30); the pitches it preferred measured no faster.
import sys
def model(Q1, Q2, taps, cin, WM, BM, pitch, prow, ntiles_sample=40, plane_tiles=None):
    td, th, tw = taps
    pitch_d = prow * pitch; pitch_c = td * pitch_d
    tv = td*th*tw; K = cin*tv; ks = (K + 7)//8
    ko = []
    for k in range(ks*8):
        if k < K:
            ci, tap = divmod(k, tv); jd, r = divmod(tap, th*tw); jh, jw = divmod(r, tw)
            ko.append(ci*pitch_c + jd*pitch_d + jh*pitch + jw)
        else: ko.append(10**7)  # zero region: one word
    plane = Q1*Q2
    tot = ideal = 0
    for T in range(ntiles_sample):
        p0 = (T * BM) % plane
        p0 = p0 - p0 % BM
        qh0 = p0 // Q2
        for warp in range(8):
            for i in range(WM):
                for h in range(2):
                    offs = []
                    for g in range(8):
                        off = warp*WM*16 + i*16 + g + 8*h
                        pos = min(p0 + off, plane - 1)
                        dq = pos//Q2 - qh0; qw = pos % Q2
                        offs.append(dq*pitch + qw)
                    for s in range(ks):
                        for half in range(2):
                            words = set()
                            for g in range(8):
                                for t in range(4):
                                    words.add(offs[g] + ko[8*s + t + 4*half])
                            banks = {}
                            for w in words: banks[w % 32] = banks.get(w % 32, 0) + 1
                            tot += max(banks.values()); ideal += 1
    return tot/ideal
name = sys.argv[1]
if name == 'L1-60': Q1, Q2, taps, cin, WM, BM, wp = 60, 58, (3,5,7), 3, 4, 512, 64
if name == 'L1-66': Q1, Q2, taps, cin, WM, BM, wp = 124, 122, (3,5,7), 3, 4, 512, 128
if name == 'L1-54': Q1, Q2, taps, cin, WM, BM, wp = 62, 62, (3,3,3), 3, 4, 256, 64
nq = min(Q1, (BM-1)//Q2 + 2); prow = (nq-1) + taps[1]
cur = wp
while cur % 32 < 9 or cur % 32 > 23 or cur % 4: cur += 1
print(name, "current pitch", cur, "ratio %.3f" % model(Q1,Q2,taps,cin,WM,BM,cur,prow))
for pitch in range(wp, wp+33, 4):
    print("  pitch", pitch, pitch % 32, "%.3f" % model(Q1,Q2,taps,cin,WM,BM,pitch,prow, 12))
