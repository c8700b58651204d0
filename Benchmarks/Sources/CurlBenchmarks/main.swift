import AsyncHTTPClient
import BenchmarkKit
print(machineDescription())
