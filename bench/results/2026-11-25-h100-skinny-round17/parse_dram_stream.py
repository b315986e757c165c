import re,sys
cur=None; d={}
for line in open(sys.argv[1]):
    m=re.match(r'(\d+) rows x (\d+) B \(ld (\d+)\).*flat read ([0-9.]+) us \(([0-9.]+) of floor',line)
    if m:
        rows,rb,ld=int(m[1]),int(m[2]),int(m[3]); cur=(rows,rb); pad=ld!=rb
        d.setdefault(cur,{})[('flat',pad)]=float(m[5]); continue
    m=re.search(r'rows/block +(\d+) ksplit (\d+) rotate (\d+): +(\d+) blocks +([0-9.]+) us +([0-9.]+) of floor',line)
    if m and cur:
        d[cur][(int(m[1]),int(m[2]),int(m[3]),pad)]=(float(m[5]),float(m[6]))
for sh,v in d.items():
    parts=[k for k in v if k[0]!='flat']
    best=max(parts,key=lambda k:v[k][1])
    # pad effect and rotation effect on the best unpadded/unrotated partition
    base=[k for k in parts if not k[3] and k[2]==0]
    b0=max(base,key=lambda k:v[k][1])
    padk=(b0[0],b0[1],0,True); rotk=(b0[0],b0[1],1,False)
    pads=[v[(k[0],k[1],k[2],True)][0]/v[k][0] for k in base if (k[0],k[1],k[2],True) in v]
    rots=[v[(k[0],k[1],1,False)][0]/v[k][0] for k in base if (k[0],k[1],1,False) in v]
    print(f"{sh[0]} x {sh[1]} B: flat {v[('flat',False)]:.3f}; best rows/block {b0[0]} ksplit {b0[1]}: {v[b0][1]:.3f} "
          f"(pad {v[padk][1]:.3f}, rotated {v[rotk][1]:.3f}); pad time ratio {min(pads):.3f}..{max(pads):.3f}, rotate {min(rots):.3f}..{max(rots):.3f}")
