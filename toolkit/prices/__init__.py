"""Live prices: what the clouds' price APIs said, when, and from which API (`gpuctl prices refresh`).

`cache.py` keeps them in one dated JSON file under the gpuctl home; `refresh.py` asks the clouds
(through toolkit/providers/<cloud>/prices.py) for the catalog's instance types. `plan` reads the
cache: a live price wins over the catalog's, an old one is shown as old, never as current.
"""
