internal import CLMDB
import Foundation

/// Runs `body` with an `MDB_val` that points at `bytes`; the value is valid only inside `body`.
@inline(__always)
func withMDBVal<Bytes: ContiguousBytes, R>(
    _ bytes: Bytes,
    _ body: (inout MDB_val) throws -> R
) rethrows -> R {
    try bytes.withUnsafeBytes { buffer in
        var value = MDB_val(mv_size: buffer.count, mv_data: UnsafeMutableRawPointer(mutating: buffer.baseAddress))
        return try body(&value)
    }
}

extension MDB_val {
    /// The bytes LMDB returned, valid until the next update or the end of the transaction.
    ///
    /// > Values returned from the database are valid only until a subsequent update operation,
    /// > or the end of the transaction. (lmdb.h, `mdb_get`)
    @inline(__always)
    var buffer: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: mv_data, count: mv_size)
    }

    /// A copy of the bytes, safe to keep after the transaction ends.
    @inline(__always)
    var bytes: [UInt8] {
        [UInt8](buffer)
    }
}
