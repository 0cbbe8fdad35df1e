udpgen: rr, N flows, N B, proxy none -> N:N, N threads, N s measured after N s warm-up
  sent         N pkt/s (N), N MB/s
  received     N pkt/s (N), N MB/s
  loss         N% (N), N late; N bad, N send errors
  latency      pN N us, pN N us, pN N us (mean N, max N)
  cpu          system N s busy (softirq N) of N, udpgen N s
JSON {"tool":"udpgen","mode":"rr","target":"N:N","proxy":"none","flows":N,"size":N,"threads":N,"window":N,"rate":N,"duration_s":N,"warmup_s":N,"tx_pkts":N,"rx_pkts":N,"tx_pps":N,"rx_pps":N,"tx_bytes":N,"rx_bytes":N,"tx_Bps":N,"rx_Bps":N,"msgs":N,"msgs_per_s":N,"lost":N,"loss":N,"late":N,"bad":N,"send_errors":N,"errors":N,"lat_us":{"count":N,"pN":N,"pN":N,"pN":N,"mean":N,"max":N},"cpu_s":{"watched":null,"system_busy":N,"softirq":N,"system_total":N,"udpgen":N}}
