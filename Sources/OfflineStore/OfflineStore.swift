// OfflineStore: see README.md for what this module does; its issue builds it out.
