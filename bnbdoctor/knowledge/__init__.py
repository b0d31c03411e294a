"""What bnbdoctor knows about bitsandbytes releases, independent of any machine."""
