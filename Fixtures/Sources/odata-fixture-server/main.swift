// `odata-fixture-server` is not built yet: its issue turns this into the real program.
print("odata-fixture-server: not yet available in this version of ODataStores")
