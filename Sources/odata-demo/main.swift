// `odata-demo` is not built yet: its issue turns this into the real program.
print("odata-demo: not yet available in this version of ODataStores")
