// `ilodata` is not built yet: its issue turns this into the real program.
print("ilodata: not yet available in this version of ODataStores")
