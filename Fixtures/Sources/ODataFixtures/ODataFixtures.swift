// The fixture producer; its issue builds it out.
