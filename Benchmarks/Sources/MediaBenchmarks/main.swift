// MediaBenchmarks: the offline store's memory while it downloads and uploads one large media resource.
//
// The fixture producer (its release or debug build, or ODATA_FIXTURE_SERVER; a process of its own, so its copy of the
// stream is not counted) serves its `Photos` media entities. The store opens with `Photos` and
// `automaticallyRetrievesStreams` (the small media of the bundled data come with it); its resident size then is the
// baseline. Then:
// 1. `download`: the producer's `Photos(1)/$value` is replaced by MEDIA_BENCH_MIB MiB (default 100; sent by
//    `CurlTransport` from a file), and the store downloads it: peak RSS above the baseline, and whether the local
//    copy is byte-identical (SHA-free: compared a chunk at a time with the file).
// 2. `upload`: `Photos(2)` is replaced locally by the same file and uploaded (`PUT …/$value` with `If-Match`): peak RSS
//    above the baseline, and whether the producer's copy has the file's size.
// The contract: each peak at most 64 MiB above the baseline.
import BenchmarkKit
import CurlHTTP
import Foundation
import HTTPTypes
import ODataCore
import OfflineStore

let mebibytes = Int(ProcessInfo.processInfo.environment["MEDIA_BENCH_MIB"] ?? "") ?? 100
guard let binary = fixtureBinary() else {
    print("MediaBenchmarks: build the producer first: swift build -c release --product odata-fixture-server (at the repository root)")
    exit(1)
}
let (producer, serviceRoot) = try startProducer(binary: binary, data: nil)
defer { producer.terminate() }
let work = FileManager.default.temporaryDirectory.appendingPathComponent("media-bench-\(UUID().uuidString)").path
try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: work) }

// The stream: MEDIA_BENCH_MIB MiB of a pattern, written 1 MiB at a time.
let streamPath = work + "/stream.bin"
guard FileManager.default.createFile(atPath: streamPath, contents: nil) else {
    print("MediaBenchmarks: cannot create \(streamPath)")
    exit(1)
}
let writer = try FileHandle(forWritingTo: URL(fileURLWithPath: streamPath))
for block in 0..<mebibytes {
    try writer.write(contentsOf: Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ block) }))
}
try writer.close()
let streamSize = Int64(mebibytes) << 20

let parameters = OfflineODataParameters(storeName: "media", storePath: work, storeEncryptionKey: "media bench", keyDerivation: .pbkdf2(rounds: 1_000))
let provider = try OfflineODataProvider(serviceRoot: serviceRoot, parameters: parameters)
try await provider.add(definingQuery: OfflineODataDefiningQuery(name: "photos", query: "Photos", automaticallyRetrievesStreams: true))
try await provider.open()
let baseline = residentBytes()
print("MediaBenchmarks: \(mebibytes) MiB stream, \(machineDescription())")
print("baseline RSS after open (bytes)\t\(baseline)")

/// Whether the file at `path` has the bytes of the stream file, compared 1 MiB at a time.
func sameAsStream(_ path: String) throws -> Bool {
    let lhs = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)), rhs = try FileHandle(forReadingFrom: URL(fileURLWithPath: streamPath))
    defer { try? lhs.close(); try? rhs.close() }
    while true {
        let left = try lhs.read(upToCount: 1 << 20) ?? Data(), right = try rhs.read(upToCount: 1 << 20) ?? Data()
        if left != right { return false }
        if left.isEmpty { return true }
    }
}

// 1. Download.
let transport = try CurlTransport()
var put = TransportRequest(method: "PUT", url: serviceRoot + "Photos(1)/$value", headerFields: [.contentType: "application/octet-stream"])
put.bodyFile = streamPath
let replaced = try await transport.send(put)
guard replaced.status == 204 else { print("the producer refused the stream: \(replaced.status)"); exit(1) }
transport.shutdown()
resetPeakResidentBytes()
var start = DispatchTime.now().uptimeNanoseconds
try await provider.download()
let downloadSeconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
let downloadPeak = peakResidentBytes() - baseline
let copy = work + "/copy.bin"
let copied = try await provider.writeMedia(of: "Photos(1)", to: URL(fileURLWithPath: copy))
let identical = try copied == streamSize && sameAsStream(copy)
try FileManager.default.removeItem(atPath: copy)
print("download: peak RSS above baseline (MiB)\t\(Double(downloadPeak) / 1_048_576)")
print("download: seconds\t\(downloadSeconds)")
print("download: local copy byte-identical\t\(identical)")

// 2. Upload.
resetPeakResidentBytes()
start = DispatchTime.now().uptimeNanoseconds
try await provider.replaceMedia(of: "Photos(2)", from: URL(fileURLWithPath: streamPath), contentType: "application/octet-stream")
let result = try await provider.upload()
let uploadSeconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
let uploadPeak = peakResidentBytes() - baseline
let uploaded = try await provider.mediaResource(of: "Photos(2)")
print("upload: peak RSS above baseline (MiB)\t\(Double(uploadPeak) / 1_048_576)")
print("upload: seconds\t\(uploadSeconds)")
print("upload: accepted\t\(result.succeeded == 1 && result.failed.isEmpty && uploaded?.isLocal == false)")
await provider.close()
let limit = 64 << 20
print("within 64 MiB of the baseline\t\(downloadPeak <= limit && uploadPeak <= limit)")
